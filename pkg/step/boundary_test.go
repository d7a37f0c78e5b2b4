package step

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// flagPackages parse command lines; under pkg/ none may be imported
// (Tekton's pkg/ imports none either): cmd/cli binds the flags of pkg/'s
// option structs.
var flagPackages = map[string]bool{
	"flag":                      true,
	"github.com/spf13/pflag":    true,
	"github.com/spf13/cobra":    true,
	"k8s.io/component-base/cli": true,
}

// flagImports returns "file:line: imports P" for every flag package
// imported by a non-test Go file under dir, and how many files it parsed.
func flagImports(dir string) ([]string, int, error) {
	var found []string
	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if flagPackages[p] {
				found = append(found, fmt.Sprintf("%s:%d: imports %s", path, fset.Position(imp.Pos()).Line, p))
			}
		}
		return nil
	})
	return found, files, err
}

// TestNoFlagPackageUnderPkg parses every non-test Go file under pkg/ and
// fails naming file:line on an import of flag, pflag or cobra.
func TestNoFlagPackageUnderPkg(t *testing.T) {
	found, files, err := flagImports("..")
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("parsed %d Go files under pkg/; the walk is broken", files)
	}
	for _, f := range found {
		t.Errorf("%s: flag parsing belongs in cmd/cli; take an options struct", f)
	}
}

// TestFlagImportCheckerReports makes the test above able to fail: a file
// importing pflag is reported at its line.
func TestFlagImportCheckerReports(t *testing.T) {
	dir := t.TempDir()
	src := "package x\n\nimport (\n\t\"fmt\"\n\tpf \"github.com/spf13/pflag\"\n)\n\nvar _ = fmt.Sprint\nvar _ pf.FlagSet\n"
	if err := writeFile(filepath.Join(dir, "x.go"), src); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "x_test.go"), "package x\n\nimport \"flag\"\n\nvar _ = flag.Parse\n"); err != nil {
		t.Fatal(err)
	}
	found, _, err := flagImports(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "x.go") + ":5: imports github.com/spf13/pflag"
	if len(found) != 1 || found[0] != want {
		t.Errorf("found %q, want [%q]", found, want)
	}
}
