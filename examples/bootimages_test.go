package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/cmd/cli"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/bootimage"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// snapshot returns every file under dir with its content.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBootImagesLocalMode runs `kiln-steps bootimages --source
// dir:examples/cluster` in-process: on this GCP cluster exactly the two
// stale GCP MachineSets are patched to the stream's image, the current one
// is left alone, the Hive-owned one and the AWS one are skipped with their
// reasons, the infra stub is upgraded to spec 3, and the folder itself is
// not modified.
func TestBootImagesLocalMode(t *testing.T) {
	before := snapshot(t, clusterDir)
	work := t.TempDir()
	results := filepath.Join(work, "results")
	var out, errb bytes.Buffer
	args := []string{workspace.StageBootImages, "--source=dir:" + clusterDir, "--work=" + work, "--results-dir=" + results,
		"--stable-timeout=2s", "--default-arch=x86_64"}
	if code := cli.Execute(context.Background(), cli.NewSteps(), args, &out, &errb); code != exitcode.ExitOK {
		t.Fatalf("bootimages: exit %d\n%s%s", code, out.String(), errb.String())
	}

	var rep workspace.BootImageReport
	rb, err := os.ReadFile(filepath.Join(work, "bootimages", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &rep); err != nil {
		t.Fatal(err)
	}
	const target = "projects/rhcos-cloud/global/images/rhcos-9-6-20251015-0-gcp-x86-64"
	var patched []string
	for _, p := range rep.Patched {
		patched = append(patched, p.Name)
		if p.To != target || !strings.HasSuffix(p.From, "rhcos-9-6-20250701-0-gcp-x86-64") {
			t.Errorf("%s: %s -> %s", p.Name, p.From, p.To)
		}
	}
	if got := strings.Join(patched, ","); got != "kiln-demo-7xk2p-infra-c,kiln-demo-7xk2p-worker-a" {
		t.Errorf("patched %s", got)
	}
	if got := strings.Join(rep.UpToDate, ","); got != "kiln-demo-7xk2p-worker-b" {
		t.Errorf("up to date %s", got)
	}
	skipped := map[string]string{}
	for _, s := range rep.Skipped {
		skipped[s.Name] = s.Reason
	}
	wantSkip := map[string]string{"kiln-demo-7xk2p-worker-hive": bootimage.ReasonOwned + " (MachinePool/worker)",
		"kiln-demo-aws-worker-us-east-1a": bootimage.ReasonProviderKind}
	for name, reason := range wantSkip {
		if !strings.Contains(skipped[name], reason) {
			t.Errorf("%s skipped for %q, want %q", name, skipped[name], reason)
		}
	}
	if len(skipped) != len(wantSkip) || len(rep.Errors) != 0 || rep.Enrolled != 5 || rep.Platform != "GCP" {
		t.Errorf("report %s", rb)
	}
	for name, want := range map[string]string{bootimage.ResultPatched: "2", bootimage.ResultSkipped: "2"} {
		if b, _ := os.ReadFile(filepath.Join(results, name)); string(b) != want {
			t.Errorf("result %s = %q, want %s", name, b, want)
		}
	}

	// The GitOps change: the two patched MachineSets, the upgraded stub.
	manifests := filepath.Join(work, "bootimages", "manifests")
	files, _ := filepath.Glob(filepath.Join(manifests, "machinesets", "*.yaml"))
	sort.Strings(files)
	if len(files) != 2 {
		t.Fatalf("output MachineSets %v", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		ms := &machinev1beta1.MachineSet{}
		if err := yaml.UnmarshalStrict(b, ms); err != nil {
			t.Fatal(err)
		}
		spec := &machinev1beta1.GCPMachineProviderSpec{}
		if _, err := bootimage.DecodeProviderSpec(ms, spec); err != nil {
			t.Fatal(err)
		}
		if spec.Disks[0].Image != target || spec.MachineType != "n2-standard-4" || spec.Kind != "GCPMachineProviderSpec" {
			t.Errorf("%s: image %s type %s kind %s", f, spec.Disks[0].Image, spec.MachineType, spec.Kind)
		}
	}
	if hist, _ := filepath.Glob(filepath.Join(manifests, "bootimagehistories", "*.yaml")); len(hist) != 2 {
		t.Errorf("BootImageHistory records %v, want one per patched MachineSet", hist)
	}
	if _, err := os.Stat(filepath.Join(manifests, "machineconfiguration_cluster.yaml")); err != nil {
		t.Errorf("MachineConfiguration status not written: %v", err)
	}
	secrets, _ := filepath.Glob(filepath.Join(manifests, "secrets", "*.yaml"))
	if len(secrets) != 1 || filepath.Base(secrets[0]) != "openshift-machine-api_infra-user-data.yaml" {
		t.Fatalf("output Secrets %v (only the spec-2 stub changes)", secrets)
	}
	b, _ := os.ReadFile(secrets[0])
	sec := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(b, sec); err != nil {
		t.Fatal(err)
	}
	var stub struct {
		Ignition struct {
			Version string
			Config  struct{ Merge []struct{ Source string } }
		}
	}
	if err := json.Unmarshal(sec.Data[bootimage.UserDataKey], &stub); err != nil || stub.Ignition.Version != "3.5.0" ||
		len(stub.Ignition.Config.Merge) != 1 || !strings.HasSuffix(stub.Ignition.Config.Merge[0].Source, ":22623/config/infra") {
		t.Errorf("upgraded stub %+v (%v)", stub, err)
	}
	if sec.Annotations[bootimage.StubUpgradedToAnnotation] != "3.5.0" {
		t.Errorf("annotations %v", sec.Annotations)
	}

	// No stub content in what the stage prints or reports.
	for name, text := range map[string]string{"stdout": out.String(), "report": string(rb)} {
		if strings.Contains(text, "api-int.kiln-demo.example.com") {
			t.Errorf("%s contains user-data", name)
		}
	}
	after := snapshot(t, clusterDir)
	if len(after) != len(before) {
		t.Fatalf("folder has %d files, had %d", len(after), len(before))
	}
	for p, c := range before {
		if after[p] != c {
			t.Errorf("%s changed", p)
		}
	}
}
