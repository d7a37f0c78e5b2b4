package payload

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

func cm(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: OSImageURLMap, Namespace: Namespace}, Data: data}
}

func TestFromObjects(t *testing.T) {
	cv := &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.21.1"}}}
	for _, tc := range []struct {
		name    string
		cm      *corev1.ConfigMap
		cv      *configv1.ClusterVersion
		want    Facts
		wantErr string
	}{
		{"all keys", cm(map[string]string{"baseOSContainerImage": "q.io/os@sha256:" + strings.Repeat("1", 64) + "", "baseOSExtensionsContainerImage": "q.io/ext:1", "releaseVersion": "4.20.0"}), cv,
			Facts{BaseOSImage: "q.io/os@sha256:" + strings.Repeat("1", 64) + "", ExtensionsImage: "q.io/ext:1", ReleaseVersion: "4.20.0"}, ""},
		{"legacy osImageURL", cm(map[string]string{"osImageURL": "q.io/legacy:1", "releaseVersion": "4.9.0"}), nil,
			Facts{BaseOSImage: "q.io/legacy:1", ReleaseVersion: "4.9.0"}, ""},
		{"release from ClusterVersion", cm(map[string]string{"baseOSContainerImage": "q.io/os:1"}), cv,
			Facts{BaseOSImage: "q.io/os:1", ReleaseVersion: "4.21.1"}, ""},
		{"base image that is no reference", cm(map[string]string{"baseOSContainerImage": "not a ref;$(id)"}), nil, Facts{},
			`ConfigMap openshift-machine-config-operator/machine-config-osimageurl: data.baseOSContainerImage: "not a ref;$(id)" is not a fully qualified image reference`},
		{"extensions image that is no reference", cm(map[string]string{"baseOSContainerImage": "q.io/os:1", "baseOSExtensionsContainerImage": "q.io/ext:$(id)"}), nil, Facts{},
			`data.baseOSExtensionsContainerImage: "q.io/ext:$(id)" is not a fully qualified image reference`},
		{"base image without a registry", cm(map[string]string{"baseOSContainerImage": "os:1"}), nil, Facts{},
			`data.baseOSContainerImage: "os:1" is not a fully qualified image reference`},
		{"legacy key that is no reference", cm(map[string]string{"osImageURL": "x y"}), nil, Facts{},
			`data.osImageURL: "x y" is not a fully qualified image reference`},
		{"no ConfigMap", nil, cv, Facts{}, "ConfigMap openshift-machine-config-operator/machine-config-osimageurl not found"},
		{"no base image", cm(map[string]string{"releaseVersion": "4.20.0"}), nil, Facts{}, "data.baseOSContainerImage is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FromObjects(tc.cm, tc.cv)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// TestResolve pushes an image to the real registry of test/env and
// resolves its tag to the digest the registry reports.
func TestResolve(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true})
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag := e.Registry.Ref("payload/rhel-coreos:4.20")
	ref, err := name.ParseReference(tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	opts := registry.Remote{Insecure: []string{e.Registry.Host}}
	got, err := Resolve(context.Background(), tag, opts)
	if err != nil {
		t.Fatal(err)
	}
	if wantRef := e.Registry.Host + "/payload/rhel-coreos@" + want.String(); got != wantRef {
		t.Errorf("Resolve = %s, want %s", got, wantRef)
	}
	// A digest reference stays as given, with no registry call.
	pinned := "unreachable.invalid/os@sha256:" + strings.Repeat("a", 64)
	if got, err := Resolve(context.Background(), pinned, opts); err != nil || got != pinned {
		t.Errorf("Resolve(%s) = %s, %v", pinned, got, err)
	}
	_, err = Resolve(context.Background(), e.Registry.Ref("payload/rhel-coreos:missing"), opts)
	if err == nil || !strings.Contains(err.Error(), `resolving image "`+e.Registry.Ref("payload/rhel-coreos:missing")+`"`) {
		t.Errorf("missing tag: err = %v", err)
	}
}
