package env

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// RepoRoot is the root of the kiln checkout: the nearest folder above the
// working directory (go test runs in the package folder) whose go.mod
// declares kiln's module. It does not use runtime.Caller, whose paths
// -trimpath rewrites.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("test/env: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(b) == kilnModule {
			return d
		}
		if filepath.Dir(d) == d {
			panic(fmt.Sprintf("test/env: no go.mod of %s above %s", kilnModule, dir))
		}
	}
}

const kilnModule = "github.com/kiln-dev/kiln"

func modulePath(gomod []byte) string {
	for _, line := range strings.Split(string(gomod), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// CacheDir is where `make tools` puts binaries (KILN_CACHE, default ~/.cache/kiln).
func CacheDir() string {
	if d := os.Getenv("KILN_CACHE"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "kiln")
}

// Versions reads hack/versions.sh, the single source of tool versions.
func Versions() (map[string]string, error) {
	f, err := os.Open(filepath.Join(RepoRoot(), "hack", "versions.sh"))
	if err != nil {
		return nil, fmt.Errorf("reading tool versions: %w", err)
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, val, ok := strings.Cut(line, "="); ok {
			v[k] = strings.Trim(val, `"'`)
		}
	}
	return v, sc.Err()
}

// ToolError says a tool is missing and how to get it. Tests never skip on it.
type ToolError struct {
	Tool, Where string
}

func (e *ToolError) Error() string {
	return fmt.Sprintf("%s not found (looked in %s): run `make tools` to install the test tools", e.Tool, e.Where)
}

// KubeAssets returns the folder holding kube-apiserver and etcd, as envtest
// wants it: $KUBEBUILDER_ASSETS, or the cache folder `make tools` fills.
func KubeAssets() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		v, err := Versions()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(CacheDir(), "bin", "k8s-"+v["K8S_VERSION"])
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			return "", &ToolError{Tool: bin, Where: dir}
		}
	}
	return dir, nil
}

// LookTool finds a command on PATH (Debian packages installed by make tools).
func LookTool(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", &ToolError{Tool: name, Where: "PATH"}
	}
	return p, nil
}

var (
	moduleDirsOnce sync.Once
	moduleDirs     map[string]string
	moduleDirsErr  error
)

// ModuleDir returns the module-cache folder of a dependency of kiln's go.mod
// at the version kiln pins, so that CRDs come from exactly that version.
func ModuleDir(module string) (string, error) {
	moduleDirsOnce.Do(func() {
		cmd := exec.Command("go", "list", "-m", "-f", "{{.Path}} {{.Dir}}",
			"github.com/openshift/api", "github.com/tektoncd/pipeline")
		cmd.Dir = RepoRoot()
		out, err := cmd.Output()
		if err != nil {
			moduleDirsErr = fmt.Errorf("locating modules with go list: %w", err)
			return
		}
		moduleDirs = map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if p, d, ok := strings.Cut(line, " "); ok && d != "" {
				moduleDirs[p] = d
			}
		}
	})
	if moduleDirsErr != nil {
		return "", moduleDirsErr
	}
	d, ok := moduleDirs[module]
	if !ok {
		return "", fmt.Errorf("module %s is not downloaded: run `go mod download`", module)
	}
	return d, nil
}

// ControllerGen returns the controller-gen binary `make tools` built.
func ControllerGen() (string, error) {
	v, err := Versions()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(CacheDir(), "bin", "controller-gen-"+v["CONTROLLER_GEN_VERSION"])
	p := filepath.Join(dir, "controller-gen")
	if _, err := os.Stat(p); err != nil {
		return "", &ToolError{Tool: "controller-gen", Where: dir}
	}
	return p, nil
}

// DownloadedModuleDir returns the module-cache folder of a module kiln does
// not import (go.mod does not list it) at an exact version, downloading it
// if needed: `go mod download -json module@version`, run outside kiln's
// module so that go.mod and go.sum stay untouched. `make tools` downloads
// the ones test/env uses ahead of time.
func DownloadedModuleDir(module, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOFLAGS=")
	out, err := cmd.Output()
	var dl struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &dl); jerr == nil && dl.Error != "" {
		return "", fmt.Errorf("downloading module %s@%s: %s (run `make tools`)", module, version, dl.Error)
	}
	if err != nil {
		return "", fmt.Errorf("downloading module %s@%s: %w (run `make tools`)", module, version, err)
	}
	if dl.Dir == "" {
		return "", fmt.Errorf("downloading module %s@%s: go mod download gave no folder", module, version)
	}
	return dl.Dir, nil
}

// hackModuleDir returns the module cache folder of module@version, a
// requirement of the tools module hack/<dir> (which `make tools` has
// downloaded), for the release config it ships.
func hackModuleDir(dir, module, version string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module+"@"+version)
	cmd.Dir = filepath.Join(RepoRoot(), "hack", dir)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating %s@%s (hack/%s) with go list: %w", module, version, dir, err)
	}
	d := strings.TrimSpace(string(out))
	if d == "" {
		return "", fmt.Errorf("module %s@%s is not downloaded: run `make tools`", module, version)
	}
	return d, nil
}
