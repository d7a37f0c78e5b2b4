package bootimage

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// TestStepLocalModeCAPI: in local mode a stale AWSMachineTemplate is cloned
// into the output folder, the MachineSet (v1beta1 form, as in the enhancement) is
// written pointing at the clone, and the old template is listed for deletion.
func TestStepLocalModeCAPI(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	inf := awsInfra("us-east-1")
	inf.TypeMeta = metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "Infrastructure"}
	cm := testStreamConfigMap(t)
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	cv := &configv1.ClusterVersion{TypeMeta: metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "ClusterVersion"},
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.20.3"},
			History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.20.3"}}}}
	mc := folderMachineConfiguration()
	stale := template(t, awsTemplateYAML, "ami-0123456789abcdef0")
	current := template(t, awsTemplateYAML, "ami-0a1b2c3d4e5f60718")
	current.SetName("ci-7xk2p-worker-us-east-1b")
	v1beta1Ref := func(u *unstructured.Unstructured, tmpl string) *unstructured.Unstructured {
		u.SetAPIVersion(CAPIGroup + "/v1beta1")
		_ = unstructured.SetNestedMap(u.Object, map[string]any{"apiVersion": InfraGroup + "/v1beta2", "kind": "AWSMachineTemplate", "name": tmpl}, "spec", "template", "spec", "infrastructureRef")
		return u
	}
	msA := v1beta1Ref(capiObject("MachineSet", "worker-a", "", "", nil), stale.GetName())
	msB := v1beta1Ref(capiObject("MachineSet", "worker-b", "", "", nil), current.GetName())
	writeManifests(t, src, inf, cm, cv, mc, stale.Object, current.Object, msA.Object, msB.Object)

	out, err := runStep(t, func(o *Options) {
		local(src, work)(o)
		o.CAPIMode, o.DefaultArch = string(CAPIAll), "x86_64"
	})
	if err != nil {
		t.Fatalf("step: %v\n%s", err, out)
	}
	if got := readResult(t, filepath.Join(work, "results"), ResultPatched); got != "1" {
		t.Errorf("%s = %q, want 1", ResultPatched, got)
	}
	capiDir := filepath.Join(work, "bootimages", "manifests", "capi")
	clones, _ := filepath.Glob(filepath.Join(capiDir, "AWSMachineTemplate_*.yaml"))
	if len(clones) != 1 {
		t.Fatalf("cloned templates %v", clones)
	}
	clone := readU(t, clones[0])
	if id, _, _ := unstructured.NestedString(clone.Object, "spec", "template", "spec", "ami", "id"); id != "ami-0a1b2c3d4e5f60718" {
		t.Errorf("clone ami %q", id)
	}
	if got := changedPaths(stale.Object["spec"], clone.Object["spec"]); len(got) != 1 {
		t.Errorf("clone spec changes %v", got)
	}
	ms := readU(t, filepath.Join(capiDir, "MachineSet_"+CAPINamespace+"_worker-a.yaml"))
	ref, err := infraRef(ms)
	if err != nil || ref.Name != clone.GetName() || ref.Version != "v1beta2" || ms.GetAPIVersion() != CAPIGroup+"/v1beta1" {
		t.Errorf("output MachineSet ref %+v (%v), apiVersion %s", ref, err, ms.GetAPIVersion())
	}
	if _, err := os.Stat(filepath.Join(capiDir, "MachineSet_"+CAPINamespace+"_worker-b.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("up-to-date MachineSet written (%v)", err)
	}
	gone := readU(t, filepath.Join(capiDir, "deleted", "AWSMachineTemplate_"+CAPINamespace+"_"+stale.GetName()+".yaml"))
	if gone.GetName() != stale.GetName() || gone.Object["spec"] != nil {
		t.Errorf("deletion manifest %v", gone.Object)
	}
	var rep Report
	rb, _ := os.ReadFile(filepath.Join(work, "bootimages", "report.json"))
	if err := json.Unmarshal(rb, &rep); err != nil || rep.CAPI == nil || len(rep.CAPI.UpToDate) != 1 || len(rep.CAPI.TemplatesDeleted) != 1 {
		t.Errorf("report %s (%v)", rb, err)
	}
}

func readU(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatal(err)
	}
	return u
}

func TestCAPIFlags(t *testing.T) {
	for _, c := range []struct{ mode, selector string }{
		{"Partial", ""},
		{"Some", ""},
		{"All", "a=b"},
		{"Partial", "a in ("},
	} {
		_, err := runStep(t, func(o *Options) {
			o.Work, o.Source, o.CAPIMode, o.CAPISelector = t.TempDir(), "dir:"+t.TempDir(), c.mode, c.selector
		})
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitcode.ExitUsage || !strings.Contains(ee.msg, "--capi-") {
			t.Errorf("%+v: %v, want a usage error naming the flag", c, err)
		}
	}
}
