package registry

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Imports that reach a registry without this package's credentials,
// mirrors, CAs and insecure flags.
var forbiddenImports = []string{
	"github.com/google/go-containerregistry/pkg/v1/remote",
	"github.com/google/go-containerregistry/pkg/v1/remote/transport",
}

const authnPath = "github.com/google/go-containerregistry/pkg/authn"

// boundaryExempt are folders (relative to the module root, slash
// separated) whose non-test files may still use the remote package: this
// package itself, and test/, the support code of tests (fixtures: pushing
// test images to test registries).
var boundaryExempt = []string{"pkg/registry", "test"}

// TestEveryRegistryAccessGoesThroughThisPackage parses every non-test Go
// file of the module and fails, naming file:line, on an import of
// go-containerregistry's remote (or remote/transport) package or a use of
// authn.DefaultKeychain outside this package: such a call would skip the
// mirrors, per-registry CAs and credentials everything else applies.
func TestEveryRegistryAccessGoesThroughThisPackage(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	found, files, err := checkTree(root)
	if err != nil {
		t.Fatal(err)
	}
	// A walk that found nothing to parse would pass for the wrong reason.
	if files < 100 {
		t.Fatalf("parsed %d Go files under %s; the walk is broken", files, root)
	}
	for _, v := range found {
		t.Errorf("%s: %s outside pkg/registry; use pkg/registry's Remote (Get, Head, Image, Index, Write, Tag, Options)", v.pos, v.what)
	}
}

// TestBoundaryCheckerReports runs the checker on snippets, so that the
// test above can fail: each direct access is reported at its line.
func TestBoundaryCheckerReports(t *testing.T) {
	cases := []struct {
		file string
		want []string // "line: what"
	}{
		{"direct_remote.go.txt", []string{
			"5: imports github.com/google/go-containerregistry/pkg/v1/remote",
		}},
		{"aliased.go.txt", []string{
			"5: imports github.com/google/go-containerregistry/pkg/v1/remote/transport",
			"10: uses authn.DefaultKeychain",
		}},
		{"keychain_only.go.txt", []string{
			"9: uses authn.DefaultKeychain",
		}},
		{"clean.go.txt", nil},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", "boundary", c.file))
			if err != nil {
				t.Fatal(err)
			}
			found, err := checkFile(token.NewFileSet(), c.file, src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range found {
				got = append(got, fmt.Sprintf("%d: %s", v.pos.Line, v.what))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("reported %q, want %q", got, c.want)
			}
		})
	}
}

// violation is one direct registry access.
type violation struct {
	pos  token.Position
	what string
}

// checkTree checks every non-test .go file under root that the go tool
// builds: testdata, vendor, hidden folders and nested modules are skipped.
// It returns the violations and how many files it parsed.
func checkTree(root string) ([]violation, int, error) {
	fset := token.NewFileSet()
	var found []violation
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return skipDir(path, rel, d.Name())
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || exempt(rel) {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		v, err := checkFile(fset, rel, src)
		if err != nil {
			return err
		}
		n++
		found = append(found, v...)
		return nil
	})
	return found, n, err
}

func skipDir(path, rel, base string) error {
	if rel == "." {
		return nil
	}
	if base == "testdata" || base == "vendor" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir // another module (hack/tools and the like)
	}
	return nil
}

func exempt(rel string) bool {
	return slices.ContainsFunc(boundaryExempt, func(dir string) bool {
		return strings.HasPrefix(rel, dir+"/")
	})
}

// checkFile reports forbidden imports and uses of authn.DefaultKeychain in
// one file (under whatever name authn is imported).
func checkFile(fset *token.FileSet, filename string, src []byte) ([]violation, error) {
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", filename, err)
	}
	var found []violation
	authn := map[string]bool{}
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: import %s: %w", filename, imp.Path.Value, err)
		}
		if slices.Contains(forbiddenImports, p) {
			found = append(found, violation{fset.Position(imp.Pos()), "imports " + p})
		}
		if p == authnPath {
			local := "authn"
			if imp.Name != nil {
				local = imp.Name.Name
			}
			authn[local] = true
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "DefaultKeychain" {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && authn[id.Name] {
			found = append(found, violation{fset.Position(sel.Pos()), "uses authn.DefaultKeychain"})
		}
		return true
	})
	return found, nil
}

// moduleRoot is the folder holding go.mod, found upward from the test's
// folder (go test runs in the package's folder; runtime.Caller's path is
// not a real path under -trimpath).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's folder")
		}
		dir = parent
	}
}
