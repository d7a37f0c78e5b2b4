package env

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"sort"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	imagev1 "github.com/openshift/api/image/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageReferences returns a release image's image-references file, the
// ImageStream `oc adm release new` writes, with one DockerImage tag per
// entry of tags (name → pullspec), sorted by name.
func ImageReferences(version string, tags map[string]string) []byte {
	names := make([]string, 0, len(tags))
	for n := range tags {
		names = append(names, n)
	}
	sort.Strings(names)
	is := imagev1.ImageStream{
		TypeMeta:   metav1.TypeMeta{APIVersion: "image.openshift.io/v1", Kind: "ImageStream"},
		ObjectMeta: metav1.ObjectMeta{Name: version, CreationTimestamp: metav1.Unix(0, 0)},
	}
	for _, n := range names {
		is.Spec.Tags = append(is.Spec.Tags, imagev1.TagReference{
			Name:        n,
			Annotations: map[string]string{"io.openshift.build.source-location": "https://github.com/openshift/" + n},
			From:        &corev1.ObjectReference{Kind: "DockerImage", Name: tags[n]},
		})
	}
	b, err := json.MarshalIndent(is, "", "  ")
	if err != nil {
		panic(err) // a fixed struct always marshals
	}
	return b
}

// TarLayer returns an uncompressed-tar layer holding files (path → content;
// a path ending in "/" is a folder).
func TarLayer(t testing.TB, files map[string][]byte) v1.Layer {
	t.Helper()
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		h := &tar.Header{Name: p, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(files[p])), ModTime: time.Unix(0, 0)}
		if p[len(p)-1] == '/' {
			h.Typeflag, h.Mode, h.Size = tar.TypeDir, 0o755, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(files[p]); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// ReleaseImage is a stand-in release image: one layer with
// release-manifests/image-references (and release-metadata), as the
// cluster-version-operator image a real payload is built on carries them.
func ReleaseImage(t testing.TB, version string, tags map[string]string) v1.Image {
	t.Helper()
	meta := []byte(`{"kind":"cincinnati-metadata-v0","version":"` + version + `"}`)
	img, err := mutate.AppendLayers(empty.Image, TarLayer(t, map[string][]byte{
		"release-manifests/":                 nil,
		"release-manifests/image-references": ImageReferences(version, tags),
		"release-manifests/release-metadata": meta,
	}))
	if err != nil {
		t.Fatal(err)
	}
	return withConfig(t, img, map[string]string{"io.openshift.release": version})
}

// PushRelease pushes ReleaseImage to ref and returns it by digest, the form
// ClusterVersion status.desired.image has.
func PushRelease(t testing.TB, ref, version string, tags map[string]string) string {
	t.Helper()
	return push(t, ref, ReleaseImage(t, version, tags))
}
