package render

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/test/golden"
)

// materialize copies a case folder into a temporary one with the test
// server's address filled in, and returns it with the pool to render.
func materialize(t *testing.T, src string, r *remote) (string, string) {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	pool := "worker"
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "POOL" {
			pool = strings.TrimSpace(string(b))
			continue
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), r.expand(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst, pool
}

func caseNames(t *testing.T, dir string, min int) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	if len(names) < min {
		t.Fatalf("%s holds %d cases, want at least %d", dir, len(names), min)
	}
	return names
}

// TestGolden renders every case under testdata/golden and compares the
// rendered MachineConfig, the results and inputs.json with the golden files
// next to it. go test -run TestGolden -update rewrites them.
func TestGolden(t *testing.T) {
	srv := newRemote(t)
	for _, name := range caseNames(t, "testdata/golden", 30) {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "golden", name)
			dir, pool := materialize(t, src, srv)
			objs, err := mcrender.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), objs, pool, testFetcher(), nil)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if !strings.HasPrefix(out.Result.Config.Name, "rendered-"+pool+"-") || len(out.Result.Config.Name) != len("rendered-"+pool+"-")+32 {
				t.Errorf("name %q is not rendered-%s-<md5>", out.Result.Config.Name, pool)
			}
			rendered, _ := json.MarshalIndent(out.Result.Config, "", "  ")
			if usesServer(t, src) {
				// The inputs hold the server's random port, so their hashes vary.
				for i := range out.Inputs {
					out.Inputs[i].SpecHash = "(depends on the test server's address)"
				}
			}
			inputs, _ := json.MarshalIndent(out.Inputs, "", "  ")
			golden.Check(t, filepath.Join(src, "rendered.golden"), append(rendered, '\n'))
			golden.Check(t, filepath.Join(src, "inputs.golden"), append(inputs, '\n'))
			golden.Check(t, filepath.Join(src, "results.golden"), []byte(formatResults(out.Results)))
		})
	}
}

func usesServer(t *testing.T, dir string) bool {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), "{{URL}}") {
			return true
		}
	}
	return false
}

func formatResults(r map[string]string) string {
	keys := make([]string, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + r[k] + "\n")
	}
	return b.String()
}

// TestBadInputs renders every case under testdata/bad and requires the
// exact error text in its error.txt ({{URL}} is the test server).
func TestBadInputs(t *testing.T) {
	srv := newRemote(t)
	for _, name := range caseNames(t, "testdata/bad", 25) {
		t.Run(name, func(t *testing.T) {
			src := filepath.Join("testdata", "bad", name)
			dir, pool := materialize(t, src, srv)
			var got string
			objs, err := mcrender.LoadDir(dir)
			if err == nil {
				_, err = Run(context.Background(), objs, pool, testFetcher(), nil)
			}
			if err == nil {
				t.Fatal("render succeeded; want an error")
			}
			got = strings.ReplaceAll(err.Error(), srv.URL, "{{URL}}") + "\n"
			got = strings.ReplaceAll(got, strings.TrimPrefix(srv.URL, "http://"), "{{HOSTPORT}}")
			got = strings.ReplaceAll(got, dir, "{{DIR}}")
			golden.Check(t, filepath.Join(src, "error.txt"), []byte(got))
		})
	}
}
