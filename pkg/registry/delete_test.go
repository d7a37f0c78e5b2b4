package registry

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// deleteRegistry is go-containerregistry's in-process registry; with
// refuse set it answers every DELETE as a registry with deletes disabled
// does (405, UNSUPPORTED).
func deleteRegistry(t *testing.T, refuse bool) string {
	t.Helper()
	h := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refuse && req.Method == http.MethodDelete {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusMethodNotAllowed)
			_, _ = w.Write([]byte(`{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`))
			return
		}
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(s.Close)
	return strings.TrimPrefix(s.URL, "http://")
}

func pushTagged(t *testing.T, host string, tags ...string) name.Digest {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	var d name.Digest
	for _, tag := range tags {
		ref, _ := name.ParseReference(host+"/kiln/os:"+tag, name.Insecure)
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		h, _ := img.Digest()
		d = ref.Context().Digest(h.String())
	}
	return d
}

func TestListTagsAndDeleteRemoveTheManifestByDigest(t *testing.T) {
	ctx := context.Background()
	host := deleteRegistry(t, false)
	r := Remote{Insecure: []string{host}}
	d := pushTagged(t, host, "kiln-one", "two")
	repo, _ := r.ParseRepo(host + "/kiln/os")
	tags, err := r.ListTags(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kiln-one", "two"}, tags); diff != "" {
		t.Errorf("ListTags (-want +got):\n%s", diff)
	}
	if err := r.Delete(ctx, d); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := r.HeadNamed(ctx, d); !errors.Is(Classify(err, "reading", d.String()), ErrNotFound) {
		t.Errorf("after Delete, HEAD %s = %v, want not found", d, err)
	}
	// A second delete (a prune completing a half-done one) says not found.
	if err := r.Delete(ctx, d); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
}

func TestDeleteRefusedNamesTheRegistry(t *testing.T) {
	host := deleteRegistry(t, true)
	r := Remote{Insecure: []string{host}}
	d := pushTagged(t, host, "kiln-one")
	err := r.Delete(context.Background(), d)
	if !errors.Is(err, ErrDeleteRefused) {
		t.Fatalf("Delete = %v, want ErrDeleteRefused", err)
	}
	if !strings.Contains(err.Error(), "registry "+host) || !strings.Contains(err.Error(), "REGISTRY_STORAGE_DELETE_ENABLED") {
		t.Errorf("Delete error %q does not name registry %s and how to enable deletes", err, host)
	}
}
