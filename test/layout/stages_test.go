package layout

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stages are the pipeline's stage packages, under pkg/.
var stages = []string{"render", "kmod", "osimage", "signing", "rollout", "bootimage", "reproduce", "report", "prune"}

// buildTags are the tags kiln is built with (Makefile TAGS): the import
// graph is the one of the binaries.
const buildTags = "containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper"

// stageImport is a stage that reaches another stage: Via are the library
// packages between them, in import order, none when the import is direct.
type stageImport struct {
	From, To string
	Via      []string
}

func (s stageImport) String() string {
	if len(s.Via) == 0 {
		return fmt.Sprintf("%s imports %s", s.From, s.To)
	}
	return fmt.Sprintf("%s imports %s through %s", s.From, s.To, strings.Join(s.Via, " → "))
}

// stageImports finds, for every stage in graph (package → its non-test
// imports), each other stage it reaches by a path whose inner packages
// are all libraries, the shortest such path first found. A stage reached
// through another stage is that stage's pair, not this one's.
func stageImports(graph map[string][]string, stagePaths []string) []stageImport {
	isStage := func(p string) bool { return slices.Contains(stagePaths, p) }
	var out []stageImport
	for _, from := range stagePaths {
		via := map[string][]string{}
		queue := []string{}
		for _, imp := range graph[from] {
			if _, seen := via[imp]; !seen {
				via[imp] = []string{}
				queue = append(queue, imp)
			}
		}
		found := map[string]bool{}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			if isStage(p) {
				if p != from && !found[p] {
					found[p] = true
					out = append(out, stageImport{From: from, To: p, Via: via[p]})
				}
				continue
			}
			for _, imp := range graph[p] {
				if _, seen := via[imp]; !seen {
					via[imp] = append(slices.Clone(via[p]), p)
					queue = append(queue, imp)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b stageImport) int { return strings.Compare(a.From+" "+a.To, b.From+" "+b.To) })
	return out
}

// moduleGraph is the module's import graph as `go list -deps` reports it,
// restricted to the module's own packages (nothing outside it can import
// a stage), with their paths relative to the module (pkg/render).
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	mod := goList(t, "list", "-m", "-f", "{{.Path}}")
	mod = strings.TrimSpace(mod)
	out := goList(t, "list", "-e", "-deps", "-tags="+buildTags, "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"/...")
	rel := func(p string) (string, bool) {
		if r, ok := strings.CutPrefix(p, mod+"/"); ok {
			return r, true
		}
		return "", false
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		p, ok := rel(fields[0])
		if !ok {
			continue
		}
		graph[p] = []string{}
		for _, imp := range fields[1:] {
			if r, ok := rel(imp); ok {
				graph[p] = append(graph[p], r)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return graph
}

func goList(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the layout test reads the import graph with the go command: %v", err)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(gobin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String()
}

func stagePaths() []string {
	out := make([]string, len(stages))
	for i, s := range stages {
		out[i] = "pkg/" + s
	}
	return out
}

// TestStagesImportNoOtherStage fails once per pair of stage packages where
// the first imports the second, directly or through library packages,
// naming the libraries between them: shared code belongs in a library
// below the stages, never in a stage another stage then imports.
func TestStagesImportNoOtherStage(t *testing.T) {
	graph := moduleGraph(t)
	for _, s := range stagePaths() {
		// A graph without every stage was read wrong, and would pass.
		if _, ok := graph[s]; !ok {
			t.Fatalf("go list reported no package %s; the import graph is incomplete", s)
		}
	}
	for _, p := range stageImports(graph, stagePaths()) {
		t.Errorf("stage %s; move what it uses into a library package", p)
	}
}

// TestStageImportsFindsEveryPath runs the checker on a small graph, so the
// test above can fail: a direct import, one through a chain of libraries
// and one through a library two stages share are found; a stage reached
// only through another stage is that stage's pair; libraries and
// cycles among them do not count.
func TestStageImportsFindsEveryPath(t *testing.T) {
	graph := map[string][]string{
		"pkg/a":     {"pkg/b", "pkg/lib1"},
		"pkg/b":     {"pkg/lib2"},
		"pkg/c":     {"pkg/lib1"},
		"pkg/d":     {"pkg/b"},
		"pkg/lib1":  {"pkg/lib3", "pkg/lib4"},
		"pkg/lib2":  {"pkg/lib2b"},
		"pkg/lib2b": {"pkg/lib2"},
		"pkg/lib3":  {"pkg/c"},
		"pkg/lib4":  {"pkg/lib3"},
	}
	got := stageImports(graph, []string{"pkg/a", "pkg/b", "pkg/c", "pkg/d"})
	want := []stageImport{
		{From: "pkg/a", To: "pkg/b", Via: []string{}},
		{From: "pkg/a", To: "pkg/c", Via: []string{"pkg/lib1", "pkg/lib3"}},
		{From: "pkg/d", To: "pkg/b", Via: []string{}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stage imports (-want +got):\n%s", d)
	}
	if s := got[1].String(); s != "pkg/a imports pkg/c through pkg/lib1 → pkg/lib3" {
		t.Errorf("message %q", s)
	}
}
