package imagebuild

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// faultOnSignatures answers reads of cosign's .sig tag with a fault and
// records writes.
type faultOnSignatures struct {
	next   http.RoundTripper
	fault  func(*http.Request) (*http.Response, error)
	writes []string
}

func (f *faultOnSignatures) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		f.writes = append(f.writes, r.Method+" "+r.URL.Path)
	}
	if strings.HasSuffix(r.URL.Path, ".sig") {
		return f.fault(r)
	}
	return f.next.RoundTrip(r)
}

func status(code int) func(*http.Request) (*http.Response, error) {
	return func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: code, Status: http.StatusText(code), Header: http.Header{}, Request: r,
			Body: io.NopCloser(strings.NewReader(""))}, nil
	}
}

// TestReuseDecisionRegistryFaultIsAnError: when the registry refuses the
// credentials, cannot be reached or fails while kiln reads a signed
// build's signatures, image-build fails with that error. It neither
// reuses (nothing was proven) nor rebuilds and pushes (the push would meet
// the same fault, and a rebuild would hide it).
func TestReuseDecisionRegistryFaultIsAnError(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	imagetest.PushBase(t, reg.Host, "base/os:1", 1)
	key := imagetest.NewCosignKey(t)
	plain := registry.Remote{Insecure: []string{reg.Host}}
	in := testInput(t, reg.Host, "base/os:1", "kiln/os", "hi\n")
	in.Identity = key.ID
	res, err := Build(ctx, plain, in)
	if err != nil {
		t.Fatal(err)
	}
	key.Sign(t, plain, res.Ref, res.Inputs)
	for _, tc := range []struct {
		name  string
		fault func(*http.Request) (*http.Response, error)
		want  error
	}{
		{"unauthorized", status(http.StatusUnauthorized), registry.ErrAuth},
		{"forbidden", status(http.StatusForbidden), registry.ErrAuth},
		{"connection refused", func(*http.Request) (*http.Response, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}, registry.ErrUnreachable},
		{"server error", status(http.StatusServiceUnavailable), registry.ErrUnreachable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &faultOnSignatures{next: http.DefaultTransport, fault: tc.fault}
			r := registry.Remote{Insecure: []string{reg.Host}, Transport: ft, Backoff: remote.Backoff{Steps: 1}}
			got, err := Build(ctx, r, in)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Build: %+v, %v; want an error wrapping %v", got, err, tc.want)
			}
			if len(ft.writes) > 0 {
				t.Errorf("a registry fault led to writes: %v", ft.writes)
			}
		})
	}
}

// TestReuseRebuildsWhenASignatureLayerIsOverTheNodeLimit: a proven build
// whose .sig artifact also holds a layer over proof.MaxAttachmentSize (the
// proof skips it, the node refuses the image for it) is not reused, since
// a reused image is not signed again: it is rebuilt to the same digest,
// with a reason naming the layer. Once signed anew it is reused.
func TestReuseRebuildsWhenASignatureLayerIsOverTheNodeLimit(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	imagetest.PushBase(t, reg.Host, "base/os:1", 1)
	key := imagetest.NewCosignKey(t)
	r := registry.Remote{Insecure: []string{reg.Host}}
	in := testInput(t, reg.Host, "base/os:1", "kiln/os", "hi\n")
	in.Identity = key.ID
	first, err := Build(ctx, r, in)
	if err != nil {
		t.Fatal(err)
	}
	key.Sign(t, r, first.Ref, first.Inputs)
	image, err := name.NewDigest(first.Ref)
	if err != nil {
		t.Fatal(err)
	}
	env.AddJunkLayer(t, image, "sig", "application/vnd.dev.cosign.simplesigning.v1+json", 2*proof.MaxAttachmentSize)

	second, err := Build(ctx, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if second.Reused || !strings.Contains(second.Rejected, "1 layers over the 4194304-byte limit nodes read") {
		t.Fatalf("reused %v, rejected %q; want a rebuild naming the oversized signature layer", second.Reused, second.Rejected)
	}
	if second.Ref != first.Ref {
		t.Errorf("the rebuild is %s, want the same image %s", second.Ref, first.Ref)
	}

	key.Sign(t, r, second.Ref, second.Inputs) // image-sign writes the artifact without the junk
	third, err := Build(ctx, r, in)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Reused {
		t.Errorf("after signing anew: reused %v, rejected %q; want reused", third.Reused, third.Rejected)
	}
}
