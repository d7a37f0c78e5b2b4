package manifests_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/test/env"
)

// typo is one manifest per kind kiln reads, each with one misspelt field,
// and the field path the apiserver's strict field validation names.
var typos = []struct {
	kind, object, field, manifest string
}{
	{"ModuleDay0", "ModuleDay0 kmm/realtime-kmod", "spec.kernelTyp", `apiVersion: kmm.sigs.x-k8s.io/v1beta1
kind: ModuleDay0
metadata: {name: realtime-kmod, namespace: kmm}
spec:
  kernelTyp: realtime
  machineConfigPoolSelector: {node-role.kubernetes.io/worker: ""}
  osMapping: {containerImage: "quay.io/example/os:kmod"}
`},
	{"MachineConfig", "MachineConfig 99-worker-rt", "spec.kernelTyp", `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfig
metadata: {name: 99-worker-rt, labels: {machineconfiguration.openshift.io/role: worker}}
spec:
  kernelTyp: realtime
`},
	{"MachineConfigPool", "MachineConfigPool worker", "spec.paused_", `apiVersion: machineconfiguration.openshift.io/v1
kind: MachineConfigPool
metadata: {name: worker}
spec:
  paused_: true
  machineConfigSelector: {matchLabels: {machineconfiguration.openshift.io/role: worker}}
`},
	{"MachineSet", "MachineSet openshift-machine-api/ci-worker-a", "spec.template.spec.providerSpecc", `apiVersion: machine.openshift.io/v1beta1
kind: MachineSet
metadata: {name: ci-worker-a, namespace: openshift-machine-api}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      providerSpecc: {}
`},
	{"ConfigMap", "ConfigMap openshift-machine-config-operator/coreos-bootimages", "dat", `apiVersion: v1
kind: ConfigMap
metadata: {name: coreos-bootimages, namespace: openshift-machine-config-operator}
dat: {stream: "{}"}
`},
	{"Secret", "Secret openshift-machine-api/worker-user-data", "stringdata", `apiVersion: v1
kind: Secret
metadata: {name: worker-user-data, namespace: openshift-machine-api}
stringdata: {userData: "{}"}
`},
	{"ClusterVersion", "ClusterVersion version", "spec.chanel", `apiVersion: config.openshift.io/v1
kind: ClusterVersion
metadata: {name: version}
spec: {clusterID: 5f8a1c2e-0000-4000-8000-000000000001, chanel: stable-4.20}
`},
	{"Infrastructure", "Infrastructure cluster", "spec.platformSpec.aws.regin", `apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata: {name: cluster}
spec: {platformSpec: {type: AWS, aws: {regin: us-east-1}}}
`},
	{"MachineConfiguration", "MachineConfiguration cluster", "spec.managedBootImage", `apiVersion: operator.openshift.io/v1
kind: MachineConfiguration
metadata: {name: cluster}
spec: {managementState: Managed, managedBootImage: {}}
`},
	{"ImageDigestMirrorSet", "ImageDigestMirrorSet release", "spec.imageDigestMirrors[0].mirror", `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata: {name: release}
spec:
  imageDigestMirrors:
  - source: quay.io/openshift-release-dev/ocp-release
    mirror: [mirror.example.com/ocp/release]
`},
	{"ImageTagMirrorSet", "ImageTagMirrorSet ubi", "spec.imageTagMirrors[0].mirrorSourcePolcy", `apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata: {name: ubi}
spec:
  imageTagMirrors:
  - source: registry.access.redhat.com/ubi9
    mirrors: [mirror.example.com/ubi9]
    mirrorSourcePolcy: NeverContactSource
`},
	{"ImageContentSourcePolicy", "ImageContentSourcePolicy legacy", "spec.repositoryDigestMirrors[0].mirrorz", `apiVersion: operator.openshift.io/v1alpha1
kind: ImageContentSourcePolicy
metadata: {name: legacy}
spec:
  repositoryDigestMirrors:
  - source: registry.redhat.io/rhel9
    mirrorz: [mirror.example.com/rhel9]
`},
	{"Image", "Image cluster", "spec.registrySources.insecureRegistry", `apiVersion: config.openshift.io/v1
kind: Image
metadata: {name: cluster}
spec:
  registrySources: {insecureRegistry: [registry.local:5000]}
`},
	{"Proxy", "Proxy cluster", "spec.httpsProxi", `apiVersion: config.openshift.io/v1
kind: Proxy
metadata: {name: cluster}
spec: {httpsProxi: "http://proxy.example.com:3128"}
`},
	{"BootImageHistory", "BootImageHistory openshift-machine-api/ci-worker-a", "spec.machinSet", `apiVersion: machineconfiguration.openshift.io/v1alpha1
kind: BootImageHistory
metadata: {name: ci-worker-a, namespace: openshift-machine-api}
spec: {machinSet: ci-worker-a}
`},
}

func walkOne(t *testing.T, file, content string) ([]runtime.Object, error) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, file), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var objs []runtime.Object
	err := manifests.Walk(dir, func(o runtime.Object) error { objs = append(objs, o); return nil })
	return objs, err
}

// TestWalkRefusesUnknownFields: a misspelt field in any kind kiln reads
// is an error naming the file, the object and the field path, not a
// silently dropped setting.
func TestWalkRefusesUnknownFields(t *testing.T) {
	for _, tc := range typos {
		t.Run(tc.kind, func(t *testing.T) {
			_, err := walkOne(t, "cluster.yaml", tc.manifest)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, want := range []string{"cluster.yaml: document 1: ", tc.object + ": ", `unknown field "` + tc.field + `"`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestWalkRefusesDuplicateFields(t *testing.T) {
	_, err := walkOne(t, "pools.yaml", "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata: {name: worker}\nspec: {paused: false}\nspec: {paused: true}\n")
	if err == nil || !strings.Contains(err.Error(), "MachineConfigPool worker") || !strings.Contains(err.Error(), `"spec" already set`) {
		t.Fatalf("error %v", err)
	}
}

func TestWalkRefusesUnknownFieldsInListItems(t *testing.T) {
	_, err := walkOne(t, "l.yaml", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a, namespace: b, labelz: {x: y}}\n")
	if err == nil || !strings.Contains(err.Error(), `items[0]: ConfigMap b/a: strict decoding error: unknown field "metadata.labelz"`) {
		t.Fatalf("error %v", err)
	}
}

const secretWithStringData = `apiVersion: v1
kind: Secret
metadata: {name: worker-user-data, namespace: openshift-machine-api}
type: Opaque
data: {userData: b2xk, disableTemplating: dHJ1ZQ==}
stringData: {userData: '{"ignition":{"version":"3.5.0"}}', extra: plain}
`

// TestSecretStringDataMerged: stringData is merged into data, stringData
// winning over data for the same key, and dropped.
func TestSecretStringDataMerged(t *testing.T) {
	objs, err := walkOne(t, "secret.yaml", secretWithStringData)
	if err != nil {
		t.Fatal(err)
	}
	s := objs[0].(*corev1.Secret)
	want := map[string][]byte{"userData": []byte(`{"ignition":{"version":"3.5.0"}}`), "disableTemplating": []byte("true"), "extra": []byte("plain")}
	if d := cmp.Diff(want, s.Data); d != "" {
		t.Errorf("data (-want +got):\n%s", d)
	}
	if s.StringData != nil {
		t.Errorf("stringData %q, want none", s.StringData)
	}
}

// TestDirectoryAndAPIServerAgree holds directory mode to the apiserver on
// the same manifests: each misspelt object is refused by the apiserver's
// strict field validation and by the directory reader with the same
// words, and a Secret with stringData reads back with the same data.
func TestDirectoryAndAPIServerAgree(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	strict := client.WithFieldValidation(k.Client, metav1.FieldValidationStrict)
	for _, ns := range []string{"kmm", "openshift-machine-api", "openshift-machine-config-operator"} {
		if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range typos {
		t.Run(tc.kind, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.manifest), &u.Object); err != nil {
				t.Fatal(err)
			}
			apiErr := strict.Create(ctx, u)
			_, dirErr := walkOne(t, "cluster.yaml", tc.manifest)
			if apiErr == nil || dirErr == nil {
				t.Fatalf("apiserver: %v; directory: %v; both must refuse", apiErr, dirErr)
			}
			words := `strict decoding error: unknown field "` + tc.field + `"`
			if !strings.Contains(apiErr.Error(), words) || !strings.Contains(dirErr.Error(), words) {
				t.Fatalf("want both to say %q\napiserver: %v\ndirectory: %v", words, apiErr, dirErr)
			}
		})
	}
	t.Run("Secret stringData", func(t *testing.T) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(secretWithStringData), &u.Object); err != nil {
			t.Fatal(err)
		}
		if err := strict.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
		stored := &corev1.Secret{}
		if err := k.Client.Get(ctx, client.ObjectKey{Namespace: "openshift-machine-api", Name: "worker-user-data"}, stored); err != nil {
			t.Fatal(err)
		}
		objs, err := walkOne(t, "secret.yaml", secretWithStringData)
		if err != nil {
			t.Fatal(err)
		}
		local := objs[0].(*corev1.Secret)
		if d := cmp.Diff(stored.Data, local.Data); d != "" || len(local.StringData) != len(stored.StringData) {
			t.Fatalf("directory data differs from the apiserver's (-apiserver +directory):\n%s\nstringData %q, apiserver %q", d, local.StringData, stored.StringData)
		}
	})
}
