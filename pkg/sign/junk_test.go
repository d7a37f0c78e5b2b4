package sign

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/empty"
	ctypes "github.com/sigstore/cosign/v2/pkg/types"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// largestLayer is the size of the largest layer of the image's artifact.
func largestLayer(t *testing.T, image name.Digest, suffix string) int64 {
	t.Helper()
	art, err := remote.Image(image.Context().Tag(strings.Replace(image.DigestStr(), ":", "-", 1) + "." + suffix))
	if err != nil {
		t.Fatal(err)
	}
	m, err := art.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	var most int64
	for _, l := range m.Layers {
		most = max(most, l.Size)
	}
	return most
}

// TestJunkAttachmentLayerDoesNotDenyGenuineImage adds a junk layer twice
// MaxAttachmentSize to the .sig and .att artifacts of an image kiln signed.
// The reuse proof skips the junk unread and still verifies kiln's
// signature and attestation; verify, which reads signatures as the node's
// CRI-O does, refuses the image and says why; image-sign's next signing
// drops the junk, after which verify and the proof accept the image. An
// artifact holding only junk proves nothing.
func TestJunkAttachmentLayerDoesNotDenyGenuineImage(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys := newKeys(t, "pw")
	want := testInputs(t, reg.Host)
	id := trust.Identity{PublicKey: keys.pub}
	digest := func(s string) name.Digest {
		d, err := name.NewDigest(s, name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	image := digest(pushImage(t, reg.Host, "kiln/os:genuine"))
	sign := func() {
		if _, err := Sign(ctx, r, SignInput{Image: image.String(), Key: keys.priv, Password: keys.pass, Inputs: want}); err != nil {
			t.Fatalf("signing: %v", err)
		}
	}
	verify := func() error {
		_, err := VerifyPolicy(ctx, PolicyInput{Image: image.String(), KeyPath: keys.pubPath, Insecure: true, OutDir: t.TempDir()})
		return err
	}
	sign()
	env.AddJunkLayer(t, image, "sig", "application/vnd.dev.cosign.simplesigning.v1+json", 2*MaxAttachmentSize)
	env.AddJunkLayer(t, image, "att", ctypes.DssePayloadType, 2*MaxAttachmentSize)

	if err := Prove(ctx, r, image, id, want); err != nil {
		t.Errorf("the proof refused the genuine image beside junk: %v", err)
	}
	err := verify()
	if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), "over the 4194304-byte limit containers/image reads") {
		t.Errorf("verify beside junk: %v; want a policy refusal naming the limit", err)
	}

	sign()
	for _, suffix := range []string{"sig", "att"} {
		if n := largestLayer(t, image, suffix); n > MaxAttachmentSize {
			t.Errorf(".%s artifact still holds a %d-byte layer after signing", suffix, n)
		}
	}
	if err := verify(); err != nil {
		t.Errorf("verify after image-sign dropped the junk: %v", err)
	}
	if err := Prove(ctx, r, image, id, want); err != nil {
		t.Errorf("the proof after image-sign dropped the junk: %v", err)
	}

	// Only junk: nothing is proven, and the error says what was skipped.
	bare := digest(pushImage(t, reg.Host, "kiln/os:junk-only"))
	if err := remote.Write(bare.Context().Tag(strings.Replace(bare.DigestStr(), ":", "-", 1)+".sig"), empty.Signatures()); err != nil {
		t.Fatal(err)
	}
	env.AddJunkLayer(t, bare, "sig", "application/vnd.dev.cosign.simplesigning.v1+json", 2*MaxAttachmentSize)
	err = Prove(ctx, r, bare, id, want)
	if !errors.Is(err, trust.ErrNotProven) || !strings.Contains(err.Error(), "no signatures found (1 layers over the 4194304-byte limit skipped, unread)") {
		t.Errorf("junk only: %v; want not proven, naming the skipped layer", err)
	}
}
