package manifests_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/manifests"
)

const (
	mdHead = "apiVersion: kmm.sigs.x-k8s.io/v1beta1\nkind: ModuleDay0\n"
	mdSpec = "spec:\n  machineConfigPoolSelector: {node-role.kubernetes.io/worker: \"\"}\n  osMapping: {containerImage: \"quay.io/example/os:kmod\"}\n"
	mcHead = "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfig\n"
	cmHead = "apiVersion: v1\nkind: ConfigMap\n"
)

// refused is one folder the apiserver would refuse, and the words of the
// error: the file, the object, and the apiserver's own message.
var refused = []struct {
	name, manifest string
	want           []string
}{
	{"misspelt kind in kiln's group", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigg\nmetadata: {name: 99-x}\n",
		[]string{`MachineConfigg 99-x: no matches for kind "MachineConfigg" in version "machineconfiguration.openshift.io/v1"`}},
	{"unknown version of a kind kiln reads", "apiVersion: machineconfiguration.openshift.io/v2\nkind: MachineConfig\nmetadata: {name: 99-x}\n",
		[]string{`no matches for kind "MachineConfig" in version "machineconfiguration.openshift.io/v2"`}},
	{"misspelt core kind", "apiVersion: v1\nkind: ConfigMapp\nmetadata: {name: a}\n",
		[]string{`ConfigMapp a: no matches for kind "ConfigMapp" in version "v1"`}},
	{"misspelt ModuleDay0 version", "apiVersion: kmm.sigs.x-k8s.io/v1beta\nkind: ModuleDay0\nmetadata: {name: a}\n",
		[]string{`no matches for kind "ModuleDay0" in version "kmm.sigs.x-k8s.io/v1beta"`}},
	{"MachineConfig without a name", mcHead + "metadata: {labels: {machineconfiguration.openshift.io/role: worker}}\n",
		[]string{`MachineConfig (no name): [metadata.name: Required value: name or generateName is required, <nil>: Invalid value: null: some validation rules were not checked`}},
	{"MachineConfig named like a path", mcHead + "metadata: {name: ../Evil/Name}\n",
		[]string{`metadata.name: Invalid value: "../Evil/Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`}},
	{"ModuleDay0 named like a path", mdHead + "metadata: {name: ../../../tmp/x, namespace: kmm}\n" + mdSpec,
		[]string{`ModuleDay0 kmm/../../../tmp/x: metadata.name: Invalid value: "../../../tmp/x": a lowercase RFC 1123 subdomain`}},
	{"300-character name", mcHead + "metadata: {name: " + strings.Repeat("a", 300) + "}\n",
		[]string{`metadata.name: Invalid value: "` + strings.Repeat("a", 300) + `": must be no more than 253 characters`}},
	{"pool named like a path", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: ../worker}\nspec: {}\n",
		[]string{`MachineConfigPool ../worker: metadata.name: Invalid value: "../worker"`}},
	{"invalid namespace", mdHead + "metadata: {name: a, namespace: Kmm_NS}\n" + mdSpec,
		[]string{`metadata.namespace: Invalid value: "Kmm_NS": a lowercase RFC 1123 label must consist of`}},
	{"invalid label value", mcHead + "metadata: {name: 99-x, labels: {machineconfiguration.openshift.io/role: \"work er\"}}\n",
		[]string{`metadata.labels: Invalid value: "work er": a valid label must be an empty string or consist of alphanumeric characters`}},
	{"annotations too large", cmHead + "metadata: {name: a, annotations: {x: " + strings.Repeat("a", 256*1024) + "}}\n",
		[]string{`metadata.annotations: Too long: may not be more than 262144 bytes`}},
	{"generateName only", cmHead + "metadata: {generateName: a-}\n",
		[]string{`metadata.generateName: Forbidden: a manifest folder is applied: give metadata.name`}},
	{"ConfigMap key that is a path", cmHead + "metadata: {name: a, namespace: kmm}\ndata: {../x: v}\n",
		[]string{`data[../x]: Invalid value: "../x": a valid config key must consist of alphanumeric characters`}},
	{"empty machineConfigPoolSelector", mdHead + "metadata: {name: a, namespace: kmm}\nspec:\n  machineConfigPoolSelector: {}\n  osMapping: {containerImage: \"quay.io/example/os:kmod\"}\n",
		[]string{`ModuleDay0 kmm/a: spec.machineConfigPoolSelector: Invalid value: 0: spec.machineConfigPoolSelector in body should have at least 1 properties`}},
	{"ModuleDay0 without osMapping", mdHead + "metadata: {name: a, namespace: kmm}\nspec:\n  machineConfigPoolSelector: {a: b}\n",
		[]string{`spec.osMapping: Required value`}},
	{"unsignedImage equal to containerImage (CEL rule)", mdHead + "metadata: {name: a, namespace: kmm}\nspec:\n  machineConfigPoolSelector: {a: b}\n  osMapping:\n    containerImage: quay.io/example/os:kmod\n    sign: {unsignedImage: quay.io/example/os:kmod, keySecret: {name: k}, certSecret: {name: c}, filesToSign: [/lib/modules/x.ko]}\n",
		[]string{`spec.osMapping: Invalid value: "object": sign.unsignedImage must differ from containerImage`}},
	{"pool pinning an image set named like a path", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: worker}\nspec: {pinnedImageSets: [{name: ../x}]}\n",
		[]string{`MachineConfigPool worker: spec.pinnedImageSets[0].name: Invalid value: "../x": spec.pinnedImageSets[0].name in body should match '^([a-zA-Z0-9]`}},
}

// TestWalkRefusesWhatTheAPIServerRefuses: each manifest is one the
// apiserver refuses on create; the folder reader refuses it too, naming
// the file, the object and the field with the apiserver's words, and the
// error is a rejected input.
func TestWalkRefusesWhatTheAPIServerRefuses(t *testing.T) {
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := walkOne(t, "cluster.yaml", tc.manifest)
			if err == nil {
				t.Fatalf("accepted %d objects", len(objs))
			}
			for _, want := range append([]string{"cluster.yaml: document 1: "}, tc.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not contain %q", err, want)
				}
			}
			if exitcode.CodeOf(err) != exitcode.ExitInputRejected {
				t.Errorf("exit code %d, want the rejected-input code", exitcode.CodeOf(err))
			}
		})
	}
}

// TestWalkPassesOtherGroupsThrough: a kind of a group kiln does not read,
// or of an OpenShift group in a version kiln knows nothing of, is handed
// over (unstructured when the scheme does not know it) under the
// apiserver's name rule for it: path segments for RBAC, whose names have
// colons, DNS subdomains for custom resources.
func TestWalkPassesOtherGroupsThrough(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: \"system:controller:kiln\"}\n---\n"+
		"apiVersion: machine.openshift.io/v1\nkind: ControlPlaneMachineSet\nmetadata: {name: cluster, namespace: openshift-machine-api}\n---\n"+
		"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n")
	var got []string
	err := manifests.Walk(dir, func(o runtime.Object) error { got = append(got, manifests.ObjectName(o)); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if want := "ClusterRole system:controller:kiln,ControlPlaneMachineSet openshift-machine-api/cluster,Widget w"; strings.Join(got, ",") != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	write(t, dir, "b.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: ../w}\n")
	err = manifests.Walk(dir, func(runtime.Object) error { return nil })
	if err == nil || !strings.Contains(err.Error(), `b.yaml: document 1: Widget ../w: metadata.name: Invalid value: "../w": a lowercase RFC 1123 subdomain`) {
		t.Fatalf("error %v", err)
	}
}

// TestWalkRefusesDuplicates: the same kind, namespace and name twice is
// an error naming both places; the same name in another namespace or of
// another kind is not.
func TestWalkRefusesDuplicates(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		err   string
	}{
		{"two MachineConfigs", map[string]string{
			"a.yaml": mcHead + "metadata: {name: 99-x}\n",
			"b.yaml": mcHead + "metadata: {name: 99-x}\n",
		}, "b.yaml: document 1: MachineConfig 99-x: duplicate: also defined in " + "DIR/a.yaml document 1"},
		{"two pools in one file", map[string]string{
			"p.yaml": "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: worker}\nspec: {}\n---\napiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: worker}\nspec: {}\n",
		}, "p.yaml: document 2: MachineConfigPool worker: duplicate: also defined in DIR/p.yaml document 1"},
		{"two payload ConfigMaps, one in a List", map[string]string{
			"a.yaml": cmHead + "metadata: {name: machine-config-osimageurl, namespace: openshift-machine-config-operator}\n",
			"b.json": `{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"machine-config-osimageurl","namespace":"openshift-machine-config-operator"}}]}`,
		}, "b.json: document 1: items[0]: ConfigMap openshift-machine-config-operator/machine-config-osimageurl: duplicate: also defined in DIR/a.yaml document 1"},
		{"same name, other namespace or kind", map[string]string{
			"a.yaml": cmHead + "metadata: {name: x, namespace: a}\n---\n" + cmHead + "metadata: {name: x, namespace: b}\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: a}\n",
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for f, c := range tc.files {
				write(t, dir, f, c)
			}
			err := manifests.Walk(dir, func(runtime.Object) error { return nil })
			switch {
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), strings.ReplaceAll(tc.err, "DIR", dir))):
				t.Fatalf("error %v\nwant it to contain %q", err, strings.ReplaceAll(tc.err, "DIR", dir))
			}
		})
	}
}

// TestWalkAcceptsValidCustomResources: the schema checks pass objects the
// apiserver takes, defaults and status included.
func TestWalkAcceptsValidCustomResources(t *testing.T) {
	_, err := walkOne(t, "ok.yaml", mdHead+"metadata: {name: a, namespace: kmm, labels: {app: x}}\n"+mdSpec+"---\n"+
		"apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: worker}\n"+
		"spec:\n  machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: worker}}\n  maxUnavailable: 10%\n"+
		"status: {machineCount: 1, updatedMachineCount: 3}\n")
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWalkSplitsTypedLists: a typed list (MachineConfigList) is handed
// over item by item, each checked as a single object: an item named like
// a path is refused naming its index.
func TestWalkSplitsTypedLists(t *testing.T) {
	objs, err := walkOne(t, "l.yaml", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigList\nitems:\n- metadata: {name: a}\n- metadata: {name: b}\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, manifests.ObjectName(o))
	}
	if strings.Join(got, ",") != "MachineConfig a,MachineConfig b" {
		t.Fatalf("got %v", got)
	}
	_, err = walkOne(t, "l.yaml", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigList\nitems:\n- metadata: {name: ../x}\n")
	if err == nil || !strings.Contains(err.Error(), `l.yaml: document 1: items[0]: MachineConfig ../x: metadata.name: Invalid value: "../x"`) {
		t.Fatalf("error %v", err)
	}
}
