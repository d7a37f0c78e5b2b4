package examples

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/test/env"
)

// TestMakeRunTwiceGivesTheSameDigests runs what `make run` runs
// (hack/run.sh: its registry on 127.0.0.1:5555, the sample's images, the
// trigger in local mode) twice, each time from an empty output folder, an
// empty registry and a fresh buildah storage, with the clock two seconds
// on, and asserts that worker, master and infra get the same image
// digests. Only the generated keys are shared, as make run shares them
// through ~/.cache/kiln/run-keys: infra's kmod image holds modules signed
// with that key.
func TestMakeRunTwiceGivesTheSameDigests(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, cmd := range []string{"kiln-trigger", "kiln-steps"} {
		build := exec.Command("go", "build", "-tags", env.BuildTags, "-trimpath", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
		build.Dir, build.Env = root, append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", cmd, err, b)
		}
	}
	keys := t.TempDir()
	run := func(i int) map[string]string {
		bb := env.NewBuildah(t, env.BuildahOptions{InsecureRegistries: []string{"127.0.0.1:5555"}})
		cmd := exec.Command("bash", "hack/run.sh")
		cmd.Dir = root
		cmd.Env = append(append(os.Environ(), bb.Env...), "KILN_RUN_OUT="+t.TempDir(), "KILN_BIN="+bin,
			"KILN_RUN_KEYS="+keys, "GOTAGS="+env.BuildTags, "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("make run #%d: %v\n%s", i, err, tail(out.String(), 40))
		}
		return digestsOf(t, out.String())
	}
	first := run(1)
	time.Sleep(2 * time.Second)
	second := run(2)
	for _, pool := range []string{"worker", "master", "infra"} {
		t.Logf("%-6s run 1 %s  run 2 %s", pool, first[pool], second[pool])
		if first[pool] == "" || first[pool] != second[pool] {
			t.Errorf("pool %s: run 1 gave %q, run 2 gave %q", pool, first[pool], second[pool])
		}
	}
}

// digestsOf reads the IMAGE DIGEST column of the trigger's closing table.
func digestsOf(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	col := -1
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && f[0] == "POOL" {
			col = -1
			for i, name := range f {
				if name == "IMAGE" {
					col = i
				}
			}
			continue
		}
		if col >= 0 && len(f) > col && strings.HasPrefix(f[col], "sha256:") {
			got[f[0]] = f[col]
		}
	}
	if len(got) == 0 {
		t.Fatalf("no digest table in the output:\n%s", tail(out, 40))
	}
	return got
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
