package imagetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// CosignKey is a real cosign key pair, the public key also on disk.
type CosignKey struct {
	Priv, Pass []byte
	ID         trust.Identity
	PubPath    string
}

// NewCosignKey makes a key pair with the password "pw".
func NewCosignKey(t testing.TB) CosignKey { return NewCosignKeyPass(t, "pw") }

// NewCosignKeyPass makes a key pair with the password pass.
func NewCosignKeyPass(t testing.TB, pass string) CosignKey {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(p, kb.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return CosignKey{Priv: kb.PrivateBytes, Pass: []byte(pass), ID: trust.Identity{PublicKey: kb.PublicBytes}, PubPath: p}
}

// Sign signs and attests image (by digest), built from inputs, as
// image-sign does.
func (k CosignKey) Sign(t testing.TB, r registry.Remote, image string, inputs trust.Inputs) {
	t.Helper()
	_, err := sign.Sign(context.Background(), r, sign.SignInput{Image: image, Key: k.Priv, Password: k.Pass, Inputs: inputs, RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
}
