package step

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stepPath is this package's import path.
const stepPath = "github.com/kiln-dev/kiln/pkg/step"

// stepImporters are the folders under pkg/ whose packages may import this
// one: the stages, whose subcommands it is the plumbing of, and the
// trigger, the other command. Every other package under pkg/ is a library
// below them (registry, manifests, pipeline, work, exitcode...): a library
// that imported the plumbing of the commands built on it would tie every
// binary that links the library to the steps' options, and invite a cycle
// as soon as the plumbing needs the library.
var stepImporters = []string{
	"bootimage", "kmod", "osimage", "prune", "render", "report", "reproduce", "rollout", "signing",
	"trigger",
}

// stepImports returns "file:line: <package> imports pkg/step" for every
// non-test Go file under root (a pkg/ folder) whose folder, relative to
// root, is not this package's nor in allowed; and the library folders it
// parsed files of.
func stepImports(root string, allowed []string) ([]string, map[string]bool, error) {
	var found []string
	libraries := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "step" || slices.Contains(allowed, rel) {
			return nil
		}
		libraries[rel] = true
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == stepPath {
				found = append(found, fmt.Sprintf("%s:%d: %s imports pkg/step", path, fset.Position(imp.Pos()).Line, rel))
			}
		}
		return nil
	})
	return found, libraries, err
}

// TestNoLibraryImportsStep parses every non-test Go file under pkg/ and
// fails, naming file:line, when a package other than a stage or the
// trigger imports pkg/step: pkg/registry, pkg/manifests, pkg/pipeline and
// every other library take what they need from the leaf packages below
// (exitcode, taskresult, work, imageref, safepath).
func TestNoLibraryImportsStep(t *testing.T) {
	found, libraries, err := stepImports("..", stepImporters)
	if err != nil {
		t.Fatal(err)
	}
	// A walk that saw none of the libraries this test is about would
	// pass for the wrong reason.
	for _, lib := range []string{"registry", "manifests", "pipeline", "work", "exitcode", "taskresult"} {
		if !libraries[lib] {
			t.Fatalf("the walk parsed no file of pkg/%s; it is broken (libraries seen: %d)", lib, len(libraries))
		}
	}
	for _, f := range found {
		t.Errorf("%s: pkg/step is the plumbing of the stages' subcommands; a library takes exit codes from pkg/exitcode, results from pkg/taskresult, the workspace from pkg/work, registry options from pkg/registry", f)
	}
}

// TestStepImportCheckerReports makes the test above able to fail: a
// library importing pkg/step is reported at its line; a stage, a test
// file and pkg/step itself are not.
func TestStepImportCheckerReports(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"registry/remote.go":      "package registry\n\nimport (\n\t\"fmt\"\n\n\t\"" + stepPath + "\"\n)\n",
		"registry/remote_test.go": "package registry\n\nimport \"" + stepPath + "\"\n",
		"render/step.go":          "package render\n\nimport \"" + stepPath + "\"\n",
		"step/options.go":         "package step\n\nimport \"fmt\"\n",
		"apis/v1/types.go":        "package v1\n\nimport s \"" + stepPath + "\"\n",
		"work/workspace.go":       "package work\n\nimport \"path/filepath\"\n",
	}
	for name, src := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(path, src); err != nil {
			t.Fatal(err)
		}
	}
	found, libraries, err := stepImports(root, []string{"render"})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(found)
	want := []string{
		filepath.Join(root, "apis", "v1", "types.go") + ":3: apis/v1 imports pkg/step",
		filepath.Join(root, "registry", "remote.go") + ":6: registry imports pkg/step",
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}
	if got := len(libraries); got != 3 {
		t.Errorf("parsed %d library folders (%v), want 3: apis/v1, registry, work", got, libraries)
	}
}
