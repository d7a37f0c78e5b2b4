// Package docs holds the checks that keep kiln's Markdown true to the
// repository: every relative link and image resolves to a tracked file
// inside it (and, for a Markdown target, to one of its headings), and no
// file points at design documents a clone of the repository does not have.
package docs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/text"
)

// maxFile caps every file these checks read; the largest tracked file is a
// CRD of about 140 KB.
const maxFile = 8 << 20

// repo is the set of files of a repository, by slash-separated path
// relative to its root, and the folders that hold them.
type repo struct {
	root  string
	files map[string]bool
	dirs  map[string]bool
}

// trackedFiles lists the files git tracks (or has staged) under root;
// without git (an exported tree) it walks root, skipping build output.
func trackedFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err == nil {
		var files []string
		for _, f := range strings.Split(string(out), "\x00") {
			if f != "" {
				files = append(files, f)
			}
		}
		return files, nil
	}
	var files []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && (rel == ".git" || rel == "_out" || rel == "_output" || rel == "bin") {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walking %s: %w", root, err)
	}
	return files, nil
}

func newRepo(root string, files []string) repo {
	r := repo{root: root, files: map[string]bool{}, dirs: map[string]bool{".": true}}
	for _, f := range files {
		r.files[f] = true
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			r.dirs[d] = true
		}
	}
	return r
}

// readCapped reads a regular file of at most maxFile bytes; anything else
// is an error naming it.
func readCapped(p string) ([]byte, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("reading %s: not a regular file", p)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", p, maxFile)
	}
	return b, nil
}

var markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))

// link is one link or image destination in a Markdown file.
type link struct {
	dest string
	line int
}

// parsed is what the checks need of a Markdown file.
type parsed struct {
	links   []link
	anchors map[string]bool
}

// parse finds the links, images and heading anchors of a Markdown file;
// destinations inside code spans and blocks are not links and are not seen.
func parse(src []byte) parsed {
	doc := markdown.Parser().Parse(text.NewReader(src))
	p := parsed{anchors: map[string]bool{}}
	seen := map[string]int{}
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Link:
			p.links = append(p.links, link{string(n.Destination), lineOf(src, n)})
		case *ast.Image:
			p.links = append(p.links, link{string(n.Destination), lineOf(src, n)})
		case *ast.Heading:
			slug := slugify(plainText(n, src))
			if k := seen[slug]; k > 0 {
				p.anchors[fmt.Sprintf("%s-%d", slug, k)] = true
			} else {
				p.anchors[slug] = true
			}
			seen[slug]++
		}
		return ast.WalkContinue, nil
	})
	return p
}

// lineOf is the 1-based line of the first text under n (or of the block
// that holds it), for messages.
func lineOf(src []byte, n ast.Node) int {
	for c := n; c != nil; c = c.Parent() {
		if c.Type() == ast.TypeBlock && c.Lines().Len() > 0 {
			return bytes.Count(src[:c.Lines().At(0).Start], []byte("\n")) + 1
		}
		if t, ok := c.FirstChild().(*ast.Text); ok {
			return bytes.Count(src[:t.Segment.Start], []byte("\n")) + 1
		}
	}
	return 0
}

func plainText(n ast.Node, src []byte) string {
	var b strings.Builder
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch c := c.(type) {
		case *ast.Text:
			b.Write(c.Segment.Value(src))
		case *ast.String:
			b.Write(c.Value)
		default:
			b.WriteString(plainText(c, src))
		}
	}
	return b.String()
}

// slugify is GitHub's heading anchor: lower case, punctuation other than
// '-' and '_' removed, each space a '-'.
func slugify(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// linkProblems checks every relative link and image of the Markdown file
// rel: its target must be a file or folder of the repository, never above
// its root, and an anchor into a Markdown file must name a heading there.
func (r repo) linkProblems(rel string) ([]string, error) {
	src, err := readCapped(filepath.Join(r.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	var problems []string
	cache := map[string]parsed{rel: parse(src)}
	for _, l := range cache[rel].links {
		u, err := url.Parse(l.dest)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q does not parse: %v", rel, l.line, l.dest, err))
			continue
		}
		if u.Scheme != "" || u.Host != "" {
			continue // external: not this check's business
		}
		target := rel
		if u.Path != "" {
			base := path.Dir(rel)
			if strings.HasPrefix(u.Path, "/") {
				base = "." // GitHub resolves a leading / at the repository root
			}
			target = path.Clean(path.Join(base, strings.TrimPrefix(u.Path, "/")))
			if target == ".." || strings.HasPrefix(target, "../") {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q leaves the repository", rel, l.line, l.dest))
				continue
			}
			if !r.files[target] && !r.dirs[target] {
				problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s is not in the repository", rel, l.line, l.dest, target))
				continue
			}
		}
		if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		p, ok := cache[target]
		if !ok {
			b, err := readCapped(filepath.Join(r.root, filepath.FromSlash(target)))
			if err != nil {
				return nil, err
			}
			p = parse(b)
			cache[target] = p
		}
		if !p.anchors[u.Fragment] {
			problems = append(problems, fmt.Sprintf("%s:%d: link %q: %s has no heading #%s", rel, l.line, l.dest, target, u.Fragment))
		}
	}
	return problems, nil
}

// privateRefs match pointers to kiln's private design documents, which a
// clone of the repository does not have. Each pattern is written so that
// this file does not match it.
var privateRefs = []*regexp.Regexp{
	regexp.MustCompile(`(?i)\bseeds? ?0\d\d\b`),
	regexp.MustCompile(`DESIGN(\.md| ?§)`),
	regexp.MustCompile(`\.\./shared/`),
	regexp.MustCompile(`(?i)\b(the|a) seeds?('s)?\b|\bseeds?'s\b|\bseed "`),
}

// referenceExempt are files whose content is checksums, not text.
func referenceExempt(rel string) bool {
	return rel == "go.sum" || (strings.HasPrefix(rel, "hack/") && strings.Count(rel, "/") == 2 && path.Base(rel) == "go.sum")
}

// referenceProblems lists each line of content that matches privateRefs.
func referenceProblems(rel string, content []byte) []string {
	if bytes.IndexByte(content[:min(len(content), 8000)], 0) >= 0 {
		return nil // binary
	}
	var problems []string
	for i, line := range strings.Split(string(content), "\n") {
		for _, re := range privateRefs {
			if m := re.FindString(line); m != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %q points at a private design document; cite a public upstream URL or a page under docs/", rel, i+1, m))
			}
		}
	}
	return problems
}

func repoRoot() (string, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("repository root %s: %w", root, err)
	}
	return root, nil
}

func loadRepo() (repo, error) {
	root, err := repoRoot()
	if err != nil {
		return repo{}, err
	}
	files, err := trackedFiles(root)
	if err != nil {
		return repo{}, err
	}
	// A tracked file deleted from the work tree (a rename not yet
	// staged) is not there for a reader either.
	present := files[:0]
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil {
			present = append(present, f)
		}
	}
	sort.Strings(present)
	return newRepo(root, present), nil
}
