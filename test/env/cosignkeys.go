package env

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sigstore/cosign/v2/pkg/cosign"
)

// CosignPassword is the password of CosignKeys' private key.
const CosignPassword = "kiln-test-pw"

// cosignPair is made once per test binary: an scrypt-encrypted key costs
// about a second on a busy machine.
var cosignPair = sync.OnceValues(func() (*cosign.KeysBytes, error) {
	return cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(CosignPassword), nil })
})

// CosignKeys writes a cosign key pair and its password into a fresh
// folder as kiln's signing-key and public-key workspaces mount them:
// cosign.key, cosign.password and cosign.pub.
func CosignKeys(t testing.TB) string {
	t.Helper()
	kb, err := cosignPair()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"cosign.key": kb.PrivateBytes, "cosign.pub": kb.PublicBytes, "cosign.password": []byte(CosignPassword + "\n")} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
