package localrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/trigger"
)

// localDirLabelled is localDir with extra labels on the worker pool.
func localDirLabelled(t *testing.T, labels string) string {
	t.Helper()
	dir := localDir(t)
	p := filepath.Join(dir, "pools.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "  name: worker\n")
	if i < 0 {
		t.Fatal("no worker pool in the fixture")
	}
	// The worker document's labels block precedes its name line.
	s := string(b[:i]) + labels + string(b[i:])
	s = strings.Replace(s, "    kiln.dev/enabled: \"true\"\n"+labels, labels, 1)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// planDir plans a manifests folder as `kiln-trigger --source dir:` does.
func planDir(t *testing.T, dir string) ([]PoolPlan, error) {
	t.Helper()
	snap, err := mcrender.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return PlanLocal(context.Background(), snap, State{Pools: map[string]PoolState{}}, "0.1", asGiven)
}

// TestPlanLocalRefusesBadPoolLabels: in directory mode a kiln.dev label
// that does not parse is an error naming the pool and the label, and no
// pool is planned; "2a" is not wave 0 and "True" is not "false".
func TestPlanLocalRefusesBadPoolLabels(t *testing.T) {
	cases := []struct{ name, labels, want string }{
		{"wave with a letter", "    kiln.dev/enabled: \"true\"\n    kiln.dev/wave: \"2a\"\n",
			`MachineConfigPool "worker": metadata.labels[kiln.dev/wave] "2a": want a non-negative integer`},
		{"enabled not a boolean", "    kiln.dev/enabled: \"True\"\n",
			`MachineConfigPool "worker": metadata.labels[kiln.dev/enabled] "True": want "true" or "false"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plans, err := planDir(t, localDirLabelled(t, c.labels))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("plans %+v error %v, want %q", plans, err, c.want)
			}
		})
	}
}

// TestNegativeWaveIsNoLabelValue: "-1" is not a label value at all; the
// folder reader refuses it, as the apiserver would, with the apiserver's
// words and before any pool is planned.
func TestNegativeWaveIsNoLabelValue(t *testing.T) {
	_, err := mcrender.LoadDir(localDirLabelled(t, "    kiln.dev/enabled: \"true\"\n    kiln.dev/wave: \"-1\"\n"))
	want := `MachineConfigPool worker: metadata.labels: Invalid value: "-1": a valid label must be an empty string or consist of alphanumeric characters`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// TestPlanLocalOrdersByWave: valid waves are read into the plan.
func TestPlanLocalOrdersByWave(t *testing.T) {
	plans, err := planDir(t, localDirLabelled(t, "    kiln.dev/enabled: \"true\"\n    kiln.dev/wave: \"3\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range plans {
		got[p.Pool] = p.Wave
	}
	if got["worker"] != 3 || got["infra"] != 0 {
		t.Fatalf("waves %v", got)
	}
}

// TestPlanLocalGivesClusterModesLabelError: directory mode refuses a bad
// kiln.dev/wave with the very error cluster mode's label check gives the
// same pool (an InvalidInputs trigger.Error), read from the folder.
func TestPlanLocalGivesClusterModesLabelError(t *testing.T) {
	dir := localDirLabelled(t, "    kiln.dev/enabled: \"true\"\n    kiln.dev/wave: \"2a\"\n")
	_, err := planDir(t, dir)
	var e *trigger.Error
	if !errors.As(err, &e) || e.Reason != trigger.ReasonInputs {
		t.Fatalf("PlanLocal: %v, want an %s error", err, trigger.ReasonInputs)
	}
	objs, err := mcrender.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range objs.Pools {
		if p.Name != "worker" {
			continue
		}
		_, _, want := trigger.PoolLabels(p)
		if want == nil || e.Error() != want.Error() {
			t.Fatalf("PlanLocal says %q, cluster mode's check %v", e.Error(), want)
		}
		return
	}
	t.Fatal("no worker pool in the folder")
}
