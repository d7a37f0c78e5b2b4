package rollout

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/kube"
)

type verified struct{}

func (verified) Verify(context.Context, string) error { return nil }

const folderPool = `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata:
  name: worker
spec:
  machineConfigSelector:
    matchLabels:
      machineconfiguration.openshift.io/role: worker
  nodeSelector:
    matchLabels:
      node-role.kubernetes.io/worker: ""
`

// folderClient is rollout's folder client over the manifests, writing to
// a fresh output folder it returns.
func folderClient(t *testing.T, manifests ...string) (client.WithWatch, string) {
	t.Helper()
	dir, out := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(strings.Join(manifests, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	f := folder(out, "worker")
	f.Dir = dir
	c, err := kube.New(kube.Source{Folder: f})
	if err != nil {
		t.Fatal(err)
	}
	return c, out
}

func outputFiles(t *testing.T, out string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(out, p)
			names = append(names, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestFolderWritesOnlyKilnsMachineConfig: a rollout folder names the file
// of kiln's MachineConfig for its pool and refuses, with a message naming
// the object, any other write: another MachineConfig, the pool, a
// deletion.
func TestFolderWritesOnlyKilnsMachineConfig(t *testing.T) {
	mc := mcfgv1.GroupVersion.WithKind("MachineConfig")
	pool := mcfgv1.GroupVersion.WithKind("MachineConfigPool")
	type path struct{ Sub, Base, Err string }
	for _, c := range []struct {
		name    string
		kind    string
		object  string
		deleted bool
		want    path
	}{
		{"kiln's MachineConfig", "MachineConfig", "99-kiln-worker-os-image", false, path{Base: "99-kiln-worker-os-image"}},
		{"another MachineConfig", "MachineConfig", "99-kiln-master-os-image", false,
			path{Err: `writing MachineConfig "99-kiln-master-os-image": a rollout to a folder writes only MachineConfig 99-kiln-worker-os-image`}},
		{"the pool", "MachineConfigPool", "worker", false,
			path{Err: `writing MachineConfigPool "worker": a rollout to a folder writes only MachineConfig 99-kiln-worker-os-image`}},
		{"deleting kiln's MachineConfig", "MachineConfig", "99-kiln-worker-os-image", true,
			path{Err: `deleting MachineConfig "99-kiln-worker-os-image": a rollout to a folder writes only MachineConfig 99-kiln-worker-os-image`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			gvk := mc
			if c.kind == "MachineConfigPool" {
				gvk = pool
			}
			var got path
			var err error
			got.Sub, got.Base, err = folder(t.TempDir(), "worker").Path(gvk, "", c.object, c.deleted)
			if err != nil {
				got.Err = err.Error()
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}

	// Through the folder's client, a refused write changes nothing.
	c, out := folderClient(t, folderPool)
	p := &mcfgv1.MachineConfigPool{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "worker"}, p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Paused = true
	if err := c.Update(context.Background(), p); err == nil || !strings.Contains(err.Error(), `writing MachineConfigPool "worker"`) {
		t.Errorf("updating the pool through the folder: %v", err)
	}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "worker"}, p); err != nil || p.Spec.Paused {
		t.Errorf("the refused update changed the pool: paused %v, %v", p.Spec.Paused, err)
	}
	if files := outputFiles(t, out); len(files) != 0 {
		t.Errorf("a refused write left %v", files)
	}
}

// TestNoControllerEndsAtTheWrite: with NoController (a folder), Run writes
// kiln's MachineConfig and ends: State Written and the gate Off with the
// gate enforced and no prediction, and neither --canary nor
// --max-unavailable touches the pool, so the MachineConfig is the only
// file. A folder whose MachineConfig already names the image writes
// nothing and reports Unchanged.
func TestNoControllerEndsAtTheWrite(t *testing.T) {
	img := "registry.example/kiln/os@sha256:" + strings.Repeat("a", 64)
	mu := intstr.FromString("50%")
	cfg := func(c client.WithWatch) Config {
		return Config{Client: c, Pool: "worker", Image: img, Canary: 1, MaxUnavailable: &mu, Verifier: verified{},
			DriftGate: DriftGateEnforce, NoController: true}
	}

	c, out := folderClient(t, folderPool)
	res, err := Run(context.Background(), cfg(c))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Result{State: StateWritten, Gate: GateOff}, res); d != "" {
		t.Errorf("result (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"99-kiln-worker-os-image.yaml"}, outputFiles(t, out)); d != "" {
		t.Errorf("output files (-want +got):\n%s", d)
	}

	existing := `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata:
  name: 99-kiln-worker-os-image
  labels:
    machineconfiguration.openshift.io/role: worker
spec:
  osImageURL: ` + img + "\n"
	c, out = folderClient(t, folderPool, existing)
	res, err = Run(context.Background(), cfg(c))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(Result{State: StateUnchanged, Gate: GateOff}, res); d != "" {
		t.Errorf("result with the image already named (-want +got):\n%s", d)
	}
	if files := outputFiles(t, out); len(files) != 0 {
		t.Errorf("output files with the image already named: %v", files)
	}
}
