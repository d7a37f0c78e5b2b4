package install

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/cmd/cli"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/bootimage"
	"github.com/kiln-dev/kiln/test/env"
)

func mustCreate(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		o.SetResourceVersion("")
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

func mustStatus(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Status().Update(context.Background(), o); err != nil {
		t.Fatalf("writing the status of %T %s: %v", o, o.GetName(), err)
	}
}

// runStep runs one kiln-steps subcommand in process, exactly as
// cmd/kiln-steps does (cmd/cli's kiln-steps tree).
func runStep(t *testing.T, stage string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Execute(t.Context(), cli.NewSteps(), append([]string{stage}, args...), &out, &out)
	return code, out.String()
}

func result(t *testing.T, dir, n string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, n))
	if err != nil {
		t.Fatalf("result %s: %v", n, err)
	}
	return string(b)
}

func pushRandom(t *testing.T, tag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	return push(t, tag, img)
}

func push(t *testing.T, tag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("pushing %s: %v", tag, err)
	}
	d, _ := img.Digest()
	return ref.Context().Digest(d.String()).String()
}

// bootImageCluster creates what a boot image pass reads on GCP: the
// Infrastructure, the coreos-bootimages stream (pkg/bootimage's test
// stream), a completed ClusterVersion, MachineConfiguration opting every
// Machine API MachineSet in, and one stale MachineSet whose user-data stub
// is Ignition spec 2.2 (so the stub upgrade writes its Secret).
func bootImageCluster(t *testing.T, c client.Client) {
	t.Helper()
	ctx := context.Background()
	inf := &configv1.Infrastructure{ObjectMeta: metav1.ObjectMeta{Name: "cluster"},
		Spec: configv1.InfrastructureSpec{PlatformSpec: configv1.PlatformSpec{Type: configv1.GCPPlatformType}}}
	mustCreate(t, c, inf)
	inf.Status = configv1.InfrastructureStatus{InfrastructureName: "ci-7xk2p", Platform: configv1.GCPPlatformType,
		PlatformStatus:       &configv1.PlatformStatus{Type: configv1.GCPPlatformType, GCP: &configv1.GCPPlatformStatus{ProjectID: "openshift-ci-1234", Region: "us-central1"}},
		ControlPlaneTopology: configv1.HighlyAvailableTopologyMode, InfrastructureTopology: configv1.HighlyAvailableTopologyMode}
	mustStatus(t, c, inf)

	stream, err := os.ReadFile(filepath.Join(env.RepoRoot(), "pkg", "bootimage", "testdata", "stream-4.20.json"))
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.BootImagesConfigMap, Namespace: bootimage.MCONamespace},
		Data:       map[string]string{bootimage.StreamKey: string(stream), bootimage.ReleaseVersionKey: "4.20.3", bootimage.MCOReleaseVersionKey: "4.20.3"},
	})

	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: "version"},
		Spec: configv1.ClusterVersionSpec{ClusterID: "0b7a8e4c-8e9a-4d8e-9c1e-2f3a4b5c6d7e"}}
	mustCreate(t, c, cv)
	image := "quay.io/openshift-release-dev/ocp-release@sha256:" + string(bytes.Repeat([]byte("ab"), 32))
	done := metav1.Now()
	cv.Status = configv1.ClusterVersionStatus{
		Desired: configv1.Release{Version: "4.20.3", Image: image}, VersionHash: "hash", ObservedGeneration: cv.Generation,
		History: []configv1.UpdateHistory{{State: configv1.CompletedUpdate, Version: "4.20.3", Image: image, Verified: true,
			StartedTime: metav1.NewTime(time.Now().Add(-time.Hour)), CompletionTime: &done}},
	}
	mustStatus(t, c, cv)

	mustCreate(t, c, &operatorv1.MachineConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: bootimage.MachineConfigurationName},
		Spec: operatorv1.MachineConfigurationSpec{
			StaticPodOperatorSpec: operatorv1.StaticPodOperatorSpec{OperatorSpec: operatorv1.OperatorSpec{ManagementState: operatorv1.Managed}},
			NodeDisruptionPolicy: operatorv1.NodeDisruptionPolicyConfig{SSHKey: operatorv1.NodeDisruptionPolicySpecSSHKey{
				Actions: []operatorv1.NodeDisruptionPolicySpecAction{{Type: operatorv1.NoneSpecAction}}}},
			ManagedBootImages: operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{{
				Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
				Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.All}}}},
		},
	})

	const stub = `{"ignition":{"version":"2.2.0","config":{"append":[{"source":"https://api-int.ci.example:22623/config/worker"}]}}}`
	mustCreate(t, c, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: bootimage.MachineAPINamespace},
		Data: map[string][]byte{bootimage.UserDataKey: []byte(stub)}})
	mustCreate(t, c, gcpMachineSet(t, "worker-a", staleGCPImage))
	_ = ctx
}

const (
	staleGCPImage = "projects/rhcos-cloud/global/images/rhcos-418-94-202410090804-0-gcp-x86-64"
)

func gcpMachineSet(t *testing.T, name, image string) *machinev1beta1.MachineSet {
	t.Helper()
	spec := &machinev1beta1.GCPMachineProviderSpec{
		MachineType: "n2-standard-4", Region: "us-central1", Zone: "us-central1-a", ProjectID: "openshift-ci-1234",
		Disks:             []*machinev1beta1.GCPDisk{{AutoDelete: true, Boot: true, SizeGB: 128, Type: "pd-ssd", Image: image}},
		NetworkInterfaces: []*machinev1beta1.GCPNetworkInterface{{Network: "ci-7xk2p-network", Subnetwork: "ci-7xk2p-worker-subnet"}},
		UserDataSecret:    &corev1.LocalObjectReference{Name: "worker-user-data"},
		CredentialsSecret: &corev1.LocalObjectReference{Name: "gcp-cloud-credentials"},
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"machine.openshift.io/cluster-api-machineset": name}
	return &machinev1beta1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: bootimage.MachineAPINamespace},
		Spec: machinev1beta1.MachineSetSpec{
			Selector: metav1.LabelSelector{MatchLabels: sel},
			Template: machinev1beta1.MachineTemplateSpec{
				ObjectMeta: machinev1beta1.ObjectMeta{Labels: sel},
				Spec:       machinev1beta1.MachineSpec{ProviderSpec: machinev1beta1.ProviderSpec{Value: &runtime.RawExtension{Raw: raw}}},
			},
		},
	}
}

// kmodImage is an unsigned day-0 kmod image: a real module built against
// this machine's kernel headers under /opt/lib/modules/<kver>/, and the
// /usr/lib/modules/<kver>/ folder kiln reads the kernel version from.
func kmodImage(t *testing.T) v1.Image {
	t.Helper()
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	ko, err := os.ReadFile(env.BuildKernelModule(t, "kiln_rbac", env.HelloModuleSource))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range []struct {
		name string
		data []byte
		dir  bool
	}{
		{name: "usr/lib/modules/" + kver + "/", dir: true},
		{name: "opt/lib/modules/" + kver + "/", dir: true},
		{name: "opt/lib/modules/" + kver + "/kiln_rbac.ko", data: ko},
	} {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if e.dir {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		_, _ = tw.Write(e.data)
	}
	_ = tw.Close()
	b := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	return img
}
