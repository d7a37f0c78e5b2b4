package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/golden"
)

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReportStep fills a workspace the way the stages do and checks the
// summary the finally task prints.
func TestReportStep(t *testing.T) {
	work := t.TempDir()
	ws := workspace.Workspace{Root: work}
	writeJSON(t, ws.RenderedPath(), mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-worker-abc"}, Spec: mcfgv1.MachineConfigSpec{OSImageURL: "quay.io/x/os@sha256:1"}})
	writeJSON(t, ws.InputsPath(), []map[string]string{{"kind": "MachineConfigPool", "name": "worker"}, {"kind": "MachineConfig", "name": "a"}, {"kind": "MachineConfig", "name": "b"}})
	writeJSON(t, ws.BuildReportPath(), workspace.BuildReport{Record: trust.Record{Ref: "r/os@sha256:2"}, Reused: true, Fingerprint: "0123456789abcdef"})
	writeJSON(t, filepath.Join(ws.StageDir(workspace.StageRollout), "timeline.json"), []workspace.Event{
		{Node: "w0", Phase: "Updated", Status: "True"}, {Node: "w1", Phase: "Updated", Status: "True"}, // before the run
		{Node: "w0", Phase: "Updated", Status: "False"},
		{Node: "w0", Phase: "UpdatePrepared", Status: "Unknown"}, {Node: "w0", Phase: "Updated", Status: "True"},
		{Node: "w1", Phase: "UpdateExecuted", Status: "Unknown"}, {Node: "w1", Phase: "NodeDegraded", Status: "True"},
	})
	writeJSON(t, filepath.Join(ws.StageDir(workspace.StageBootImages), "report.json"), workspace.BootImageReport{
		Enrolled: 3, Patched: []workspace.Outcome{{}}, Skipped: []workspace.Outcome{{Reason: "owned"}, {Reason: "owned"}},
	})
	// The rollout failed: its cause, as the step recorded it, leads its row.
	if err := ws.WriteCause(workspace.StageRollout, errors.New("rolling out r/os@sha256:2 to pool worker: node w1 degraded: "+
		"UpdateExecuted: Draining node failed: pod default/web-0 cannot be evicted (PodDisruptionBudget web allows 0 disruptions)")); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := DefaultOptions()
	o.Pool, o.Work, o.ResultsDir, o.Aggregate = "worker", work, t.TempDir(), "Failed"
	o.Trigger, o.Changes = "machineconfig", "MachineConfigs edited 50-worker-chrony, 99-worker-ssh; MachineConfig added 60-worker-kargs"
	// --status render=Succeeded, then the Task's statuses array as arguments.
	o.Statuses = []string{"render=Succeeded", "kmod-build=None", "rollout=Failed"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(t.Context(), step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	golden.Check(t, filepath.Join("testdata", "summary.txt"), out.Bytes())
	for name, want := range map[string]string{"FAILED_STAGE": "rollout", "FAILURE": ws.ReadCause(workspace.StageRollout)} {
		if got, err := os.ReadFile(filepath.Join(o.ResultsDir, name)); err != nil || string(got) != want || want == "" {
			t.Errorf("result %s = %q (%v), want %q", name, got, err, want)
		}
	}
	for i, l := range strings.Split(out.String(), "\n") {
		if n := len([]rune(l)); n > Width {
			t.Errorf("line %d is %d columns wide: %q", i+1, n, l)
		}
	}
	saved, err := os.ReadFile(filepath.Join(work, "report", "summary.txt"))
	if err != nil || !bytes.Equal(saved, out.Bytes()) {
		t.Errorf("report/summary.txt differs from the printed summary (%v)", err)
	}
	md, err := os.ReadFile(filepath.Join(work, "report", "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"## kiln: pool worker; trigger machineconfig: MachineConfigs edited 50-worker-chrony, 99-worker-ssh; MachineConfig added 60-worker-kargs; Failed at rollout; image r/os@sha256:2; 1 node updated",
		"| render | Succeeded | rendered-worker-abc from 2 MachineConfigs; osImageURL quay.io/x/os@sha256:1 |",
		"| kmod-build | Skipped |  |",
		"| rollout | Failed | error: rolling out r/os@sha256:2 to pool worker: node w1 degraded:",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}

func TestReportErrors(t *testing.T) {
	work := t.TempDir()
	ws := workspace.Workspace{Root: work}
	if err := os.MkdirAll(filepath.Dir(ws.RenderedPath()), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(ws.RenderedPath(), []byte("{not json"), 0o644)
	if _, err := Collect(ws, nil); err == nil || !strings.Contains(err.Error(), "reading the render report: rendered.json") {
		t.Errorf("corrupt rendered.json: %v", err)
	}
	o := DefaultOptions()
	o.Pool, o.Work, o.Statuses = "worker", t.TempDir(), []string{"render"}
	if err := o.Validate(); exitcode.CodeOf(err) != exitcode.ExitUsage || !strings.Contains(err.Error(), `--status "render": want stage=status`) {
		t.Errorf("bad --status: %v", err)
	}
}
