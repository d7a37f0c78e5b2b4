package examples

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// clusterDir is the sample cluster, relative to this package.
const clusterDir = "cluster"

// loadAll reads the folder the way every stage does (pkg/manifests).
func loadAll(t *testing.T) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	if err := manifests.Walk(clusterDir, func(o runtime.Object) error { objs = append(objs, o); return nil }); err != nil {
		t.Fatal(err)
	}
	return objs
}

func find[T runtime.Object](objs []runtime.Object, match func(T) bool) T {
	var zero T
	for _, o := range objs {
		if t, ok := o.(T); ok && match(t) {
			return t
		}
	}
	return zero
}

// TestManifestsDecodeStrictly: every document of examples/cluster is a
// kind kiln's scheme knows and decodes with unknown or duplicate fields
// refused; every providerSpec decodes strictly into its platform's type;
// and pkg/manifests reads exactly the objects the README lists.
func TestManifestsDecodeStrictly(t *testing.T) {
	scheme, err := apis.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	strict := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	files, err := filepath.Glob(filepath.Join(clusterDir, "*", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests (%v)", err)
	}
	docs := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for i := 1; ; i++ {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if len(bytes.TrimSpace(stripComments(raw))) == 0 {
				continue
			}
			docs++
			obj, _, err := strict.Decode(raw, nil, nil)
			if err != nil {
				t.Errorf("%s document %d: %v", f, i, err)
				continue
			}
			if ms, ok := obj.(*machinev1beta1.MachineSet); ok {
				checkProviderSpec(t, f, ms)
			}
		}
	}
	counts := map[string]int{}
	for _, o := range loadAll(t) {
		gvks, _, err := scheme.ObjectKinds(o)
		if err != nil {
			t.Fatalf("%T: %v", o, err)
		}
		counts[gvks[0].Kind]++
	}
	want := map[string]int{"MachineConfigPool": 3, "MachineConfig": 14, "ModuleDay0": 1, "ConfigMap": 3, "Secret": 2,
		"MachineSet": 5, "MachineConfiguration": 1, "ClusterVersion": 1, "Infrastructure": 1}
	total := 0
	for k, n := range want {
		total += n
		if counts[k] != n {
			t.Errorf("%d %s objects, want %d (all: %v)", counts[k], k, n, counts)
		}
	}
	if docs != total {
		t.Errorf("%d documents, want %d", docs, total)
	}
}

// checkProviderSpec decodes the providerSpec strictly into the Go type of
// the kind it names.
func checkProviderSpec(t *testing.T, file string, ms *machinev1beta1.MachineSet) {
	t.Helper()
	raw := ms.Spec.Template.Spec.ProviderSpec.Value.Raw
	var head struct{ Kind string }
	_ = json.Unmarshal(raw, &head)
	var into any
	switch head.Kind {
	case "GCPMachineProviderSpec":
		into = &machinev1beta1.GCPMachineProviderSpec{}
	case "AWSMachineProviderConfig":
		into = &machinev1beta1.AWSMachineProviderConfig{}
	default:
		t.Errorf("%s MachineSet %s: providerSpec kind %q", file, ms.Name, head.Kind)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		t.Errorf("%s MachineSet %s providerSpec: %v", file, ms.Name, err)
	}
}

func stripComments(raw []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if s := strings.TrimSpace(l); !strings.HasPrefix(s, "#") && s != "---" {
			out = append(out, l)
		}
	}
	return []byte(strings.Join(out, "\n"))
}

// TestManifestsPinBuiltImages: the digests the manifests name are the ones
// the builder makes, twice in a row, so manifests and builder cannot drift;
// the payload facts agree with the builder's constants.
func TestManifestsPinBuiltImages(t *testing.T) {
	first, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	second, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]string{}
	for i, n := range first {
		a, err := n.Ref()
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := second[i].Ref(); a != b {
			t.Fatalf("builder is not deterministic: %s then %s", a, b)
		}
		refs[n.Repository] = a
	}
	objs := loadAll(t)
	cm := find(objs, func(c *corev1.ConfigMap) bool { return c.Name == payload.OSImageURLMap })
	cv := find(objs, func(c *configv1.ClusterVersion) bool { return c.Name == payload.ClusterVersionName })
	boot := find(objs, func(c *corev1.ConfigMap) bool { return c.Name == "coreos-bootimages" })
	if cm == nil || cv == nil || boot == nil {
		t.Fatal("payload ConfigMaps or ClusterVersion missing")
	}
	facts, err := payload.FromObjects(cm, cv)
	if err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string][2]string{
		"baseOSContainerImage":             {facts.BaseOSImage, refs[BaseRepository]},
		"baseOSExtensionsContainerImage":   {facts.ExtensionsImage, refs[ExtensionsRepository]},
		"ClusterVersion desired.image":     {facts.ReleaseImage, refs[ReleaseRepository]},
		"ClusterVersion history[0].image":  {cv.Status.History[0].Image, refs[ReleaseRepository]},
		"release version":                  {facts.ReleaseVersion, ReleaseVersion},
		"coreos-bootimages releaseVersion": {boot.Data["releaseVersion"], ReleaseVersion},
	} {
		if c[0] != c[1] {
			t.Errorf("%s is %q, the builder makes %q (run go run ./hack/examplebase --print and update the manifests)", what, c[0], c[1])
		}
	}
	md := find(objs, func(m *kmmv1beta1.ModuleDay0) bool { return true })
	if md == nil || md.Spec.OSMapping.Literal != NodeOSImage || !strings.HasSuffix(md.Spec.OSMapping.ContainerImage, ":"+OSVersion) {
		t.Errorf("ModuleDay0 osMapping does not match the OS %s: %+v", OSVersion, md)
	}
}

// TestPushedImagesServeThePayload pushes the images to a real registry and
// reads them back the way the stages do: the release image's
// image-references give the base by digest and DTK_AUTO, and the base
// tells its kernel version.
func TestPushedImagesServeThePayload(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	images, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	refs, err := Push(ctx, reg.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Push(ctx, reg.Host, images); err != nil || strings.Join(again, ",") != strings.Join(refs, ",") {
		t.Fatalf("second push: %v %v", again, err)
	}
	opts := registry.Remote{Insecure: []string{reg.Host}}
	tags, err := payload.ReleaseImages(ctx, refs[2], opts)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := images[0].Ref()
	if got, _ := tags.Lookup(payload.TagRHELCoreOS); got != base {
		t.Errorf("rhel-coreos %q, want %q", got, base)
	}
	if got, _ := tags.Lookup(payload.TagDriverToolkit); got != DriverToolkitImage {
		t.Errorf("driver-toolkit %q, want %q", got, DriverToolkitImage)
	}
	got := tags.Tags()
	sort.Strings(got)
	if strings.Join(got, ",") != "driver-toolkit,rhel-coreos,rhel-coreos-extensions" {
		t.Errorf("tags %v", got)
	}
	d, err := name.NewDigest(refs[0], name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	kver, err := modsign.KernelFullVersion(img)
	if err != nil || kver != KernelVersion {
		t.Errorf("kernel version %q (%v), want %q", kver, err, KernelVersion)
	}
	osr, err := payload.ReadImageFile(img, "usr/lib/os-release")
	if err != nil || !strings.Contains(string(osr), `OSTREE_VERSION="`+OSVersion+`"`) {
		t.Errorf("os-release %q (%v)", osr, err)
	}
}
