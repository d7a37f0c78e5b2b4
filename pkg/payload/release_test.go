package payload

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	configv1 "github.com/openshift/api/config/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

const (
	dtkRef = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	osRef  = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

var testTags = map[string]string{TagDriverToolkit: dtkRef, TagRHELCoreOS: osRef}

// blobLog is go-containerregistry's in-process registry behind httptest,
// recording which blobs were fetched.
type blobLog struct {
	host string
	mu   sync.Mutex
	gets []string
}

func startRegistry(t *testing.T) *blobLog {
	t.Helper()
	bl := &blobLog{}
	reg := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			bl.mu.Lock()
			bl.gets = append(bl.gets, r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:])
			bl.mu.Unlock()
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	bl.host = strings.TrimPrefix(srv.URL, "http://")
	return bl
}

func (bl *blobLog) fetched(d v1.Hash) bool {
	bl.mu.Lock()
	defer bl.mu.Unlock()
	for _, g := range bl.gets {
		if g == d.String() {
			return true
		}
	}
	return false
}

func (bl *blobLog) push(t *testing.T, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(bl.host+"/"+repoTag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return ref.String()
}

func layered(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// rawLayer writes tar headers as given: whiteouts, symlinks, "./" names.
func rawLayer(t *testing.T, hs ...*tar.Header) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func refsLayer(t *testing.T, tags map[string]string) v1.Layer {
	return env.TarLayer(t, map[string][]byte{"release-manifests/": nil, ImageReferencesPath: env.ImageReferences("4.20.0", tags)})
}

// TestReleaseImages reads real image-references layers through a real
// (in-process) registry: the tags, last layer wins, whiteouts, and the
// error for each way a release image can be wrong.
func TestReleaseImages(t *testing.T) {
	bl := startRegistry(t)
	opts := registry.Remote{Insecure: []string{bl.host}}
	base, err := random.Layer(64<<10, "application/vnd.oci.image.layer.v1.tar")
	if err != nil {
		t.Fatal(err)
	}
	baseDigest, _ := base.Digest()
	older := map[string]string{TagDriverToolkit: osRef}
	sym := &tar.Header{Name: ImageReferencesPath, Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}

	for _, tc := range []struct {
		name    string
		img     v1.Image
		wantDTK string
		wantErr string // after `reading release image "<ref>": `
	}{
		{"one layer on a base", layered(t, base, refsLayer(t, testTags)), dtkRef, ""},
		{"last layer wins", layered(t, refsLayer(t, older), refsLayer(t, testTags)), dtkRef, ""},
		{"a layer without the file keeps the lower one", layered(t, refsLayer(t, testTags), env.TarLayer(t, map[string][]byte{"etc/motd": []byte("hi")})), dtkRef, ""},
		{"./ names", layered(t, env.TarLayer(t, map[string][]byte{"./" + ImageReferencesPath: env.ImageReferences("4.20.0", testTags)})), dtkRef, ""},
		{"opaque folder and the file in one layer", layered(t, refsLayer(t, older),
			env.TarLayer(t, map[string][]byte{"release-manifests/.wh..wh..opq": nil, ImageReferencesPath: env.ImageReferences("4.20.0", testTags)})), dtkRef, ""},
		{"no file", layered(t, base), "", "no release-manifests/image-references (not a release image?)"},
		{"file whited out", layered(t, refsLayer(t, testTags), env.TarLayer(t, map[string][]byte{"release-manifests/.wh.image-references": nil})),
			"", "no release-manifests/image-references (not a release image?)"},
		{"folder whited out", layered(t, refsLayer(t, testTags), env.TarLayer(t, map[string][]byte{".wh.release-manifests": nil})),
			"", "no release-manifests/image-references (not a release image?)"},
		{"opaque folder above", layered(t, refsLayer(t, testTags), env.TarLayer(t, map[string][]byte{"release-manifests/.wh..wh..opq": nil})),
			"", "no release-manifests/image-references (not a release image?)"},
		{"symlink", layered(t, rawLayer(t, sym)), "", `reading layer 0: release-manifests/image-references is not a regular file (tar type '2')`},
		{"bad JSON", layered(t, env.TarLayer(t, map[string][]byte{ImageReferencesPath: []byte(`{"kind":"ImageStream","spec":{"tags":[`)})),
			"", "release-manifests/image-references: decoding the ImageStream: unexpected EOF"},
		{"driver-toolkit missing", layered(t, refsLayer(t, map[string]string{TagRHELCoreOS: osRef})),
			"", `release-manifests/image-references has no tag "driver-toolkit"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ref := bl.push(t, "ocp/release:"+strings.Trim(strings.NewReplacer(" ", "-", "/", "-", ".", "-").Replace(tc.name), "-"), tc.img)
			got, err := DriverToolkitImage(context.Background(), ref, opts)
			if tc.wantErr != "" {
				want := `reading release image "` + ref + `": ` + tc.wantErr
				if strings.Contains(tc.wantErr, "has no tag") {
					want = "release image " + ref + ": " + tc.wantErr
				}
				if err == nil || err.Error() != want {
					t.Fatalf("err = %v\nwant %s", err, want)
				}
				return
			}
			if err != nil || got != tc.wantDTK {
				t.Fatalf("DriverToolkitImage = %q, %v; want %q", got, err, tc.wantDTK)
			}
		})
	}

	t.Run("only the layers above the file are read", func(t *testing.T) {
		ref := bl.push(t, "ocp/release:lazy", layered(t, base, refsLayer(t, testTags)))
		bl.mu.Lock()
		bl.gets = nil
		bl.mu.Unlock()
		r, err := ReleaseImages(context.Background(), ref, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(r.Tags(), ","); got != "driver-toolkit,rhel-coreos" || r.Release() != ref {
			t.Errorf("Tags = %s, Release = %s", got, r.Release())
		}
		if os, err := r.Lookup(TagRHELCoreOS); err != nil || os != osRef {
			t.Errorf("Lookup(rhel-coreos) = %q, %v", os, err)
		}
		if bl.fetched(baseDigest) {
			t.Errorf("the base layer %s was fetched; only the top layer holds image-references", baseDigest)
		}
	})

	t.Run("image missing", func(t *testing.T) {
		ref := bl.host + "/ocp/release:absent"
		_, err := ReleaseImages(context.Background(), ref, opts)
		if err == nil || !strings.HasPrefix(err.Error(), `reading release image "`+ref+`": `) || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("ErrNoImageReferences is matchable", func(t *testing.T) {
		ref := bl.push(t, "ocp/release:none", layered(t, base))
		_, err := ReleaseImages(context.Background(), ref, opts)
		if !errors.Is(err, ErrNoImageReferences) {
			t.Fatalf("err = %v, want ErrNoImageReferences", err)
		}
	})
}

func clusterVersion(version, image string) *configv1.ClusterVersion {
	return &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{Desired: configv1.Release{Version: version, Image: image}}}
}

// TestExtractIgnoresOpaqueFolders is why ReadImageFile walks layers itself:
// go-containerregistry's flattening still yields a file under a folder a
// higher layer made opaque. When this fails, Extract has learnt opaque
// folders and ReadImageFile can use it.
func TestExtractIgnoresOpaqueFolders(t *testing.T) {
	img := layered(t, refsLayer(t, testTags), env.TarLayer(t, map[string][]byte{"release-manifests/.wh..wh..opq": nil}))
	if _, err := ReadImageFile(img, ImageReferencesPath); !errors.Is(err, ErrNoImageReferences) {
		t.Errorf("ReadImageFile: %v, want ErrNoImageReferences", err)
	}
	if _, err := extractFile(img, ImageReferencesPath); err != nil {
		t.Errorf("mutate.Extract now honours opaque folders (%v): use it in ReadImageFile", err)
	}
}

// TestFactsWithDriverToolkit: FromObjects records status.desired.image and
// WithDriverToolkit reads the driver-toolkit tag of that release image.
func TestFactsWithDriverToolkit(t *testing.T) {
	bl := startRegistry(t)
	ref := bl.push(t, "ocp/release:4.20.0", env.ReleaseImage(t, "4.20.0", testTags))
	cv := clusterVersion("4.20.0", ref)
	f, err := FromObjects(cm(map[string]string{"baseOSContainerImage": osRef}), cv)
	if err != nil {
		t.Fatal(err)
	}
	if f.ReleaseImage != ref || f.DriverToolkitImage != "" {
		t.Fatalf("FromObjects: %+v", f)
	}
	got, err := f.WithDriverToolkit(context.Background(), registry.Remote{Insecure: []string{bl.host}})
	if err != nil || got.DriverToolkitImage != dtkRef || got.BaseOSImage != osRef {
		t.Fatalf("WithDriverToolkit = %+v, %v", got, err)
	}
	_, err = Facts{BaseOSImage: osRef}.WithDriverToolkit(context.Background(), registry.Remote{})
	if err == nil || err.Error() != "reading payload: ClusterVersion version: status.desired.image is empty" {
		t.Fatalf("no release image: %v", err)
	}
}

// TestParseImageReferences: a real payload's image-references (trimmed to
// a few tags, testdata/) parses, and every malformed shape is named.
func TestParseImageReferences(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "image-references.json"))
	if err != nil {
		t.Fatal(err)
	}
	tags, err := ParseImageReferences(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(tags) != 4 || !strings.HasSuffix(tags[TagDriverToolkit], "@sha256:7d7b1dd8a3d4b9c1fa3b8ec3f4c5e0c2f1b6b58b1ad3fb0d2bbf8b1f2a0c9e11") {
		t.Errorf("tags = %v", tags)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "nope", "decoding the ImageStream: invalid character 'o' in literal null (expecting 'u')"},
		{"other kind", `{"kind":"ConfigMap"}`, `kind is "ConfigMap", want ImageStream`},
		{"no tags", `{"kind":"ImageStream","spec":{}}`, "spec.tags is empty"},
		{"tag without name", `{"kind":"ImageStream","spec":{"tags":[{"from":{"kind":"DockerImage","name":"q/a:1"}}]}}`, "spec.tags[0]: name is empty"},
		{"tag without from", `{"kind":"ImageStream","spec":{"tags":[{"name":"driver-toolkit"}]}}`, `spec.tags[0] "driver-toolkit": from.name is empty`},
		{"ImageStreamTag", `{"kind":"ImageStream","spec":{"tags":[{"name":"a","from":{"kind":"ImageStreamTag","name":"b:1"}}]}}`, `spec.tags[0] "a": from.kind is "ImageStreamTag", want DockerImage`},
		{"bad pullspec", `{"kind":"ImageStream","spec":{"tags":[{"name":"a","from":{"kind":"DockerImage","name":"Q//x"}}]}}`, `spec.tags[0] "a": from.name "Q//x": could not parse reference: Q//x`},
		{"empty path component", `{"kind":"ImageStream","spec":{"tags":[{"name":"a","from":{"kind":"DockerImage","name":"quay.io//x:1"}}]}}`, `spec.tags[0] "a": from.name "quay.io//x:1": invalid reference format`},
		{"named twice", `{"kind":"ImageStream","spec":{"tags":[{"name":"a","from":{"kind":"DockerImage","name":"q/a:1"}},{"name":"a","from":{"kind":"DockerImage","name":"q/a:2"}}]}}`,
			`spec.tags[1] "a": named twice, as q/a:1 and q/a:2`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseImageReferences([]byte(tc.in))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v\nwant %s", err, tc.want)
			}
		})
	}
}

func FuzzParseImageReferences(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "image-references.json")); err == nil {
		f.Add(b)
	}
	f.Add(env.ImageReferences("4.20.0", testTags))
	f.Add([]byte(`{"kind":"ImageStream","spec":{"tags":[{"name":"a","from":{"kind":"DockerImage","name":"q/a:1"}}]}}`))
	f.Add([]byte(`{"kind":"ImageStream","spec":{"tags":[{"name":"a"}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tags, err := ParseImageReferences(b)
		if err != nil {
			if tags != nil {
				t.Fatalf("tags %v with error %v", tags, err)
			}
			return
		}
		if len(tags) == 0 {
			t.Fatal("no tags and no error")
		}
		for n, ref := range tags {
			if n == "" {
				t.Fatalf("empty tag name in %v", tags)
			}
			if _, err := name.ParseReference(ref); err != nil {
				t.Fatalf("tag %q: pullspec %q does not parse: %v", n, ref, err)
			}
		}
	})
}
