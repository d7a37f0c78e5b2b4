package sign

import (
	"context"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestVerifySignatureArtifactWithoutTheImage: the .sig of an image that
// was deleted still verifies with the signer's key, and not with another.
func TestVerifySignatureArtifactWithoutTheImage(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys, other := newKeys(t, "pw"), newKeys(t, "pw")
	image := pushImage(t, reg.Host, "kiln/os:v1")
	if _, err := Sign(ctx, r, SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host), RunID: "run"}); err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(image, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, d); err != nil {
		t.Fatal(err)
	}
	v, err := LoadVerifier(keys.pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifySignatureArtifact(ctx, r, d, v); err != nil {
		t.Errorf("VerifySignatureArtifact with the signer's key after the image was deleted: %v", err)
	}
	ov, err := LoadVerifier(other.pubPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifySignatureArtifact(ctx, r, d, ov); err == nil {
		t.Error("VerifySignatureArtifact with another key passed, want a refusal")
	}
}
