package bootimage

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestImageIDShapes(t *testing.T) {
	cases := []struct {
		name  string
		check func(string) error
		ok    []string
		bad   []string
	}{
		{"aws ami", checkAWSAMI,
			[]string{"ami-0a1b2c3d4e5f60718", "ami-1a2b3c4d"},
			[]string{"", "ami-", "ami-0A1B2C3D4E5F60718", "ami-0a1b2c3d4e5f6071", "ami-1a2b3c4d5", "ami-0a1b2c3d4e5f60718 ", "garbage", "ari-1a2b3c4d", "ami-1a2b3c4g", "ami-0a1b2c3d4e5f60718\n"}},
		{"gcp project", checkGCPProject,
			[]string{"rhcos-cloud", "my-corp-images", "abcdef"},
			[]string{"", "abc", "Rhcos-cloud", "rhcos-cloud-", "1rhcos", "rhcos/cloud", "rhcos_cloud", strings.Repeat("a", 31)}},
		{"gcp image name", checkGCPName,
			[]string{"rhcos-9-6-20261001-0-gcp-x86-64", "a"},
			[]string{"", "rhcos-9.6", "Rhcos", "9rhcos", "rhcos-", "rhcos/../x", strings.Repeat("a", 64)}},
		{"vsphere name", checkVSphereName,
			[]string{"9.6.20261001-0", "ci-7xk2p-rhcos-9.6.20261001-0"},
			[]string{"", ".", "..", "a/b", `a\b`, "a\x00b", "a\nb", strings.Repeat("a", 81)}},
		{"vsphere template", checkVSphereTemplate,
			[]string{"rhcos-9.6-template", "/dc1/vm/ci-7xk2p/ci-7xk2p-rhcos-9.6.20261001-0"},
			[]string{"", "/dc1/vm/../x", "/dc1//x", "/dc1/vm/", "/dc1/vm/x\x1b", "a/./b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range tc.ok {
				if err := tc.check(v); err != nil {
					t.Errorf("%q refused: %v", v, err)
				}
			}
			for _, v := range tc.bad {
				if tc.check(v) == nil {
					t.Errorf("%q accepted", v)
				}
			}
		})
	}
}

func TestAzureMarketplaceShapes(t *testing.T) {
	good := AzureImage{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_420", Version: "420.6.20261001"}
	if f, v, err := checkAzureImage(&good); err != nil {
		t.Fatalf("%s %q refused: %v", f, v, err)
	}
	for field, mutate := range map[string]func(*AzureImage){
		"publisher": func(i *AzureImage) { i.Publisher = "azure:openshift" },
		"offer":     func(i *AzureImage) { i.Offer = "" },
		"sku":       func(i *AzureImage) { i.SKU = "aro 420" },
		"version":   func(i *AzureImage) { i.Version = "latest" },
	} {
		img := good
		mutate(&img)
		if f, _, err := checkAzureImage(&img); err == nil || f != field {
			t.Errorf("bad %s: field %q err %v", field, f, err)
		}
	}
}

// streamWith returns the test stream with one JSON value replaced
// (path through objects, from the document root).
func streamWith(t *testing.T, value string, path ...string) *Stream {
	t.Helper()
	s, err := ParseStream(streamConfigMapWith(t, value, path...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func streamConfigMapWith(t *testing.T, value string, path ...string) *corev1.ConfigMap {
	t.Helper()
	cm := testStreamConfigMap(t)
	var doc map[string]any
	if err := json.Unmarshal([]byte(cm.Data[StreamKey]), &doc); err != nil {
		t.Fatal(err)
	}
	m := doc
	for _, p := range path[:len(path)-1] {
		m = m[p].(map[string]any)
	}
	m[path[len(path)-1]] = value
	b, _ := json.Marshal(doc)
	cm.Data[StreamKey] = string(b)
	return cm
}

// TestUpdatersRefuseMalformedStreamImageIDs: a stream value that is not
// an image id of the provider's shape is an error naming the MachineSet,
// the stream field and the value, and the plan carries no edit.
func TestUpdatersRefuseMalformedStreamImageIDs(t *testing.T) {
	x86 := []string{"architectures", "x86_64"}
	path := func(p ...string) []string { return append(append([]string(nil), x86...), p...) }
	noPlan := machinev1beta1.Image{Publisher: "azureopenshift", Offer: "aro4", SKU: "aro_418", Version: "418.94.20241009", Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}
	cases := []struct {
		name     string
		platform configv1.PlatformType
		spec     any
		value    string
		path     []string
		field    string
	}{
		{"aws garbage ami", configv1.AWSPlatformType, awsSpec("ami-0123456789abcdef0", "us-east-1"), "ami-$(reboot)",
			path("images", "aws", "regions", "us-east-1", "image"), "architectures.x86_64.images.aws.regions.us-east-1.image"},
		{"aws uppercase ami", configv1.AWSPlatformType, awsSpec("ami-0123456789abcdef0", "us-east-1"), "ami-0A1B2C3D4E5F60718",
			path("images", "aws", "regions", "us-east-1", "image"), "architectures.x86_64.images.aws.regions.us-east-1.image"},
		{"gcp project with a path", configv1.GCPPlatformType, gcpSpec(oldGCP), "rhcos-cloud/global/images/evil",
			path("images", "gcp", "project"), "architectures.x86_64.images.gcp.project"},
		{"gcp name not rfc1035", configv1.GCPPlatformType, gcpSpec(oldGCP), "RHCOS_latest",
			path("images", "gcp", "name"), "architectures.x86_64.images.gcp.name"},
		{"azure sku with urn separator", configv1.AzurePlatformType, azureSpec(noPlan), "aro_420:evil",
			path("rhel-coreos-extensions", "marketplace", "azure", "no-purchase-plan", "hyperVGen1", "sku"),
			"architectures.x86_64.rhel-coreos-extensions.marketplace.azure.no-purchase-plan.hyperVGen1.sku"},
		{"azure floating version", configv1.AzurePlatformType, azureSpec(noPlan), "latest",
			path("rhel-coreos-extensions", "marketplace", "azure", "no-purchase-plan", "hyperVGen1", "version"),
			"architectures.x86_64.rhel-coreos-extensions.marketplace.azure.no-purchase-plan.hyperVGen1.version"},
		{"vsphere release with a path", configv1.VSpherePlatformType, vsphereSpec("ci-7xk2p-rhcos-old"), "../../other-dc/evil",
			path("artifacts", "vmware", "release"), "architectures.x86_64.artifacts.vmware.release"},
		{"vsphere release with a control character", configv1.VSpherePlatformType, vsphereSpec("ci-7xk2p-rhcos-old"), "9.6\x1b[2J",
			path("artifacts", "vmware", "release"), "architectures.x86_64.artifacts.vmware.release"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := UpdaterFor(tc.platform)
			plan, err := u.Plan(Input{MachineSet: machineSet(t, "ci-worker-a", tc.spec), Arch: "x86_64",
				Stream: streamWith(t, tc.value, tc.path...), Infra: infra(tc.platform)})
			if err == nil {
				t.Fatalf("accepted %q: edits %v", tc.value, plan.Edits)
			}
			msg := err.Error()
			for _, want := range []string{"MachineSet " + MachineAPINamespace + "/ci-worker-a", tc.field, jsonQuote(tc.value), "no patch"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not name %q", msg, want)
				}
			}
			if len(plan.Edits) != 0 {
				t.Errorf("edits %v after a refused id", plan.Edits)
			}
		})
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	q := string(b)
	// fmt's %q and JSON agree on everything these cases use but control
	// characters; compare the printable prefix then.
	if i := strings.IndexByte(q, '\\'); i > 0 {
		return q[:i]
	}
	return q
}

// TestStepLocalModeRefusesGarbageAMI: `kiln-steps bootimages --source dir:`
// with a stream whose AMI for the MachineSet's region is garbage fails,
// names the MachineSet, the stream field and the value, and writes no
// MachineSet into the output folder.
func TestStepLocalModeRefusesGarbageAMI(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	objs := localFleet(t, map[string][]byte{UserDataKey: []byte(stubV35)}, nil)
	bad := streamConfigMapWith(t, "ami-deadbeef; rm -rf /", "architectures", "x86_64", "images", "aws", "regions", "us-east-1", "image")
	objs[1].(*corev1.ConfigMap).Data[StreamKey] = bad.Data[StreamKey]
	writeManifests(t, src, objs...)

	out, err := runStep(t, local(src, work))
	if err == nil {
		t.Fatalf("step succeeded with a garbage AMI:\n%s", out)
	}
	for _, want := range []string{"MachineSet openshift-machine-api/ci-worker-us-east-1a", "architectures.x86_64.images.aws.regions.us-east-1.image", `"ami-deadbeef; rm -rf /"`} {
		if !strings.Contains(err.Error()+out, want) {
			t.Errorf("output does not name %q:\n%s\n%s", want, out, err)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(work, "bootimages", "manifests", "machinesets", "*.yaml")); len(files) != 0 {
		t.Fatalf("MachineSets written after a refused AMI: %v", files)
	}
}

// TestStepLocalModeReadsSecretStringData: a stub user-data Secret written
// with stringData (valid in a manifest, merged into data by the apiserver)
// is read the same way in directory mode: the MachineSet is patched.
func TestStepLocalModeReadsSecretStringData(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	writeManifests(t, src, localFleet(t, nil, map[string]string{UserDataKey: stubV35})...)
	out, err := runStep(t, local(src, work))
	if err != nil {
		t.Fatalf("step: %v\n%s", err, out)
	}
	if got := readResult(t, filepath.Join(work, "results"), ResultPatched); got != "1" {
		t.Errorf("%s = %q\n%s", ResultPatched, got, out)
	}
}

// localFleet is an AWS cluster as manifests: Infrastructure, the stream
// ConfigMap (objs[1]), ClusterVersion, MachineConfiguration, the stub
// Secret (data or stringData) and one stale MachineSet in us-east-1.
func localFleet(t *testing.T, data map[string][]byte, stringData map[string]string) []any {
	inf := infra(configv1.AWSPlatformType)
	inf.TypeMeta = metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "Infrastructure"}
	cm := testStreamConfigMap(t)
	cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	cv := &configv1.ClusterVersion{TypeMeta: metav1.TypeMeta{APIVersion: "config.openshift.io/v1", Kind: "ClusterVersion"},
		ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.20.3"},
			History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.20.3"}}}}
	mc := folderMachineConfiguration()
	sec := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: MachineAPINamespace}, Data: data, StringData: stringData}
	stale := machineSet(t, "ci-worker-us-east-1a", awsSpec("ami-0123456789abcdef0", "us-east-1"))
	return []any{inf, cm, cv, mc, sec, stale}
}
