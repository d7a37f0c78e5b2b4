package osimage

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

// cosignKey is a real cosign key pair, the public key also on disk.
type cosignKey struct {
	priv, pass []byte
	id         trust.Identity
	pubPath    string
}

func newCosignKey(t testing.TB) cosignKey { return newCosignKeyPass(t, "pw") }

func newCosignKeyPass(t testing.TB, pass string) cosignKey {
	t.Helper()
	kb, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(pass), nil })
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(p, kb.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return cosignKey{priv: kb.PrivateBytes, pass: []byte(pass), id: trust.Identity{PublicKey: kb.PublicBytes}, pubPath: p}
}

// sign signs and attests a build as image-sign does.
func (k cosignKey) sign(t testing.TB, r registry.Remote, res *BuildResult) {
	t.Helper()
	_, err := sign.Sign(context.Background(), r, sign.SignInput{Image: res.Ref, Key: k.priv, Password: k.pass, Inputs: res.Inputs, RunID: "test"})
	if err != nil {
		t.Fatal(err)
	}
}
