package imagebuild

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
)

func emptyIndex() v1.ImageIndex { return empty.Index }

// writeAuth writes a docker config.json with one registry's credentials.
func writeAuth(t *testing.T, dir, host, user, pass string) string {
	t.Helper()
	p := filepath.Join(dir, user+"-"+pass+".json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
