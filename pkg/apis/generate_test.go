package apis_test

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/test/env"
)

// TestGeneratedUpToDate regenerates deepcopy code and CRDs into a copy of
// the module and fails when the committed files differ: run `make generate`.
func TestGeneratedUpToDate(t *testing.T) {
	gen, err := env.ControllerGen()
	if err != nil {
		t.Fatal(err)
	}
	root := env.RepoRoot()
	tmp := t.TempDir()
	for _, dir := range append([]string{"config/crd", "hack"}, apisPackages(t, root)...) {
		copyTree(t, filepath.Join(root, dir), filepath.Join(tmp, dir))
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(tmp, f))
	}
	// Generation must not depend on what is committed: remove the outputs.
	generated := generatedFiles(t, root)
	for _, rel := range generated {
		os.Remove(filepath.Join(tmp, rel))
	}
	cmd := exec.Command("bash", filepath.Join(tmp, "hack", "generate.sh"), gen, tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/generate.sh: %v\n%s", err, out)
	}
	regenerated := generatedFiles(t, tmp)
	if strings.Join(regenerated, ",") != strings.Join(generated, ",") {
		t.Fatalf("generated files: committed %v, generation gives %v: run `make generate`", generated, regenerated)
	}
	for _, rel := range generated {
		want, err := os.ReadFile(filepath.Join(tmp, rel))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `make generate`", rel)
		}
	}
}

// generatedFiles lists controller-gen outputs below root, relative to it.
func generatedFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	for _, pattern := range []string{"pkg/apis/*/*/zz_generated.deepcopy.go", "config/crd/*.yaml"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			if filepath.Base(p) == "kustomization.yaml" { // hand-written, for config/
				continue
			}
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no generated files under %s", root)
	}
	return files
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		copyFile(t, p, filepath.Join(dst, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, info.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// apisPackages lists the folders of kiln's own packages that pkg/apis
// builds from (itself and what it imports, such as pkg/imageref), so the
// copy compiles for controller-gen however the imports grow.
func apisPackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./pkg/apis/...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the packages pkg/apis imports: %v", err)
	}
	var dirs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || strings.HasPrefix(rel, "..") {
			t.Fatalf("package folder %s is outside the repository", dir)
		}
		dirs = append(dirs, rel)
	}
	return dirs
}
