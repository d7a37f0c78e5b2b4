package registry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// heldLayerPut holds the PUT of one blob until the PUT of another has
// been sent, or until a timeout, after which it fails the request.
type heldLayerPut struct {
	next          http.RoundTripper
	held, awaited string // digests
	sent          chan struct{}
}

func (h *heldLayerPut) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPut {
		switch req.URL.Query().Get("digest") {
		case h.awaited:
			close(h.sent)
		case h.held:
			select {
			case <-h.sent:
			case <-time.After(5 * time.Second):
				return nil, fmt.Errorf("the config's upload was not under way while the layer %s was uploading", h.held)
			}
		}
	}
	return h.next.RoundTrip(req)
}

// TestPushImageUploadsTheConfigWhileTheLayersUpload holds the layer's
// upload until the config's upload has been sent: a push that uploads the
// config only after its layers never gets there and fails; the push must
// complete, the tag holding the image.
func TestPushImageUploadsTheConfigWhileTheLayersUpload(t *testing.T) {
	reg := startLoggingRegistry(t)
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	hold := &heldLayerPut{next: http.DefaultTransport, held: layer.String(), awaited: cfg.String(), sent: make(chan struct{})}
	r := Remote{Insecure: []string{reg.host()}, Transport: hold, Backoff: remote.Backoff{Steps: 1}}
	tag := parseRef(t, reg.host()+"/kiln/os:kiln-abc")
	if err := r.PushImage(context.Background(), tag, img); err != nil {
		t.Fatal(err)
	}
	got, err := remote.Head(tag)
	want, _ := img.Digest()
	if err != nil || got.Digest != want {
		t.Fatalf("tag holds %v (%v), want %s", got, err, want)
	}
	if n := reg.count("PUT", "digest="+strings.ReplaceAll(cfg.String(), ":", "%3A")); n != 1 {
		t.Errorf("%d config uploads, want 1", n)
	}
}
