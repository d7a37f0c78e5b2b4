package docs

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// Every relative link and image in the repository's Markdown resolves to a
// file or folder inside it, and every anchor into a Markdown file names one
// of its headings.
func TestRepositoryLinksResolve(t *testing.T) {
	r, err := loadRepo()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for f := range r.files {
		if !strings.HasSuffix(f, ".md") || inTestdata(f) {
			continue
		}
		n++
		problems, err := r.linkProblems(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
	if n < 20 {
		t.Errorf("checked %d Markdown files; the repository has more: is the root right (%s)?", n, r.root)
	}
}

// inTestdata: golden files are written for another place (a generated
// catalog README under catalog/task/<name>/<version>/), so their relative
// links resolve there, not beside the golden file.
func inTestdata(f string) bool {
	return strings.HasPrefix(f, "testdata/") || strings.Contains(f, "/testdata/")
}

// No tracked file points at kiln's private design documents.
func TestNoPrivateDesignReferences(t *testing.T) {
	r, err := loadRepo()
	if err != nil {
		t.Fatal(err)
	}
	for f := range r.files {
		if referenceExempt(f) {
			continue
		}
		b, err := readCapped(filepath.Join(r.root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range referenceProblems(f, b) {
			t.Error(p)
		}
	}
}

// writeTree makes a repository of the given files under a new folder and
// returns it with every file listed, as git would list them.
func writeTree(t *testing.T, files map[string]string) repo {
	t.Helper()
	root := t.TempDir()
	var names []string
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return newRepo(root, names)
}

func TestLinkProblems(t *testing.T) {
	r := writeTree(t, map[string]string{
		"docs/guide.md": "# Guide\n\n## Local mode (`make run`)\n\n## Local mode (`make run`)\n",
		"docs/img.png":  "png",
		"pkg/x/x.go":    "package x\n",
	})
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"file, folder, image and anchors that exist",
			"[a](guide.md) [b](../pkg/x) [c](img.png) ![d](./img.png) [e](guide.md#local-mode-make-run) " +
				"[f](guide.md#local-mode-make-run-1) [g](#top) [h](/docs/guide.md)\n\n# Top\n", nil},
		{"external links and mail are not checked",
			"[a](https://example.com/x.md) [b](mailto:a@example.com) <https://example.org/y>\n", nil},
		{"links in code are not links",
			"`[a](missing.md)`\n\n```\n[b](missing.md)\n```\n", nil},
		{"a missing file",
			"text\n\n[a](missing.md)\n", []string{`docs/page.md:3: link "missing.md": docs/missing.md is not in the repository`}},
		{"a missing image",
			"![logo](logo.svg)\n", []string{`docs/page.md:1: link "logo.svg": docs/logo.svg is not in the repository`}},
		{"a link out of the repository",
			"[a](../../outside/notes.md)\n", []string{`docs/page.md:1: link "../../outside/notes.md" leaves the repository`}},
		{"an anchor with no heading",
			"[a](guide.md#install)\n", []string{`docs/page.md:1: link "guide.md#install": docs/guide.md has no heading #install`}},
		{"an anchor into the file itself",
			"# Page\n\n[a](#nowhere)\n", []string{`docs/page.md:3: link "#nowhere": docs/page.md has no heading #nowhere`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(r.root, "docs", "page.md")
			if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			r.files["docs/page.md"] = true
			got, err := r.linkProblems("docs/page.md")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSlugifyAsGitHub(t *testing.T) {
	for in, want := range map[string]string{
		"Local mode (`make run`)":              "local-mode-make-run",
		"Registries and disconnected clusters": "registries-and-disconnected-clusters",
		"Who holds which secret":               "who-holds-which-secret",
		"Names, paths, reads and output":       "names-paths-reads-and-output",
		"kiln-steps render":                    "kiln-steps-render",
		"Exit codes: 0–7":                      "exit-codes-07",
	} {
		if got := slugify(in); got != want {
			t.Errorf("slugify(%q) = %q, want %q", in, got, want)
		}
	}
}

// The patterns are built here from pieces so that no file of the
// repository holds them whole.
func TestReferenceProblems(t *testing.T) {
	design := "DESIGN"
	seed := "seed"
	shared := ".." + "/shared/"
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"a numbered design document", "// as " + seed + " 003 says\n", []string{`f.go:1: "` + seed + ` 003"`}},
		{"the plural, upper case", "SEEDS" + " 001 and 004\n", []string{`f.go:1: "SEEDS` + ` 001"`}},
		{"no space", "see " + seed + "002\n", []string{`f.go:1: "` + seed + `002"`}},
		{"a section sign", "ok\n(" + design + " §7)\n", []string{`f.go:2: "` + design + ` §"`}},
		{"the file", "read " + design + ".md\n", []string{`f.go:1: "` + design + `.md"`}},
		{"a path out of the repository", "see " + shared + "x\n", []string{`f.go:1: "` + shared + `"`}},
		{"words that merely look alike", "a seeded random source (seed 42); DESIGNS; design.md; .." + "/sharedir\n", nil},
		{"the document by its old name", "as the " + seed + "'s sample says\n", []string{`f.go:1: "the ` + seed + `'s"`}},
		{"a quoted section", "(" + seed + " \"Skew\")\n", []string{`f.go:1: "` + seed + ` \""`}},
		{"binary content", "\x00" + "seed" + " 003", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, p := range referenceProblems("f.go", []byte(tc.content)) {
				got = append(got, p[:strings.Index(p, " points at")])
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	for _, f := range []string{"go.sum", "hack/tools/go.sum", "hack/chains/go.sum"} {
		if !referenceExempt(f) {
			t.Errorf("%s is checksums, not text, and should be exempt", f)
		}
	}
	for _, f := range []string{"go.mod", "hack/a/b/go.sum", "pkg/go.sum", path.Join("docs", "x.md")} {
		if referenceExempt(f) {
			t.Errorf("%s should be checked", f)
		}
	}
}

// troubleshooting.md carries the exit-code table the binaries print; a
// change to the table fails here until the page is updated.
func TestTroubleshootingExitCodesCurrent(t *testing.T) {
	r, err := loadRepo()
	if err != nil {
		t.Fatal(err)
	}
	b, err := readCapped(filepath.Join(r.root, "docs", "troubleshooting.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := exitcode.ExitCodesMarkdown(); !strings.Contains(string(b), want) {
		t.Errorf("docs/troubleshooting.md lacks the current exit-code table; copy it from docs/cli/README.md (generated by go run ./cmd/cli/gen):\n%s", want)
	}
}
