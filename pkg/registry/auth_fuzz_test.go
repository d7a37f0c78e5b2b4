package registry

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseAuthFile feeds arbitrary auth files (pull secrets, config.json,
// auth.json) to the checker: it must not panic, what it accepts must be
// usable by containers/image, and its errors must never quote a secret.
func FuzzParseAuthFile(f *testing.F) {
	a := base64.StdEncoding.EncodeToString([]byte("user:pass"))
	for _, seed := range []string{
		``, `{}`, `null`, `[]`, `{"auths":{}}`,
		`{"auths":{"quay.io":{"auth":"` + a + `"}}}`,
		`{"auths":{"https://index.docker.io/v1/":{"auth":"` + a + `","email":""}}}`,
		`{"auths":{"quay.io/org/repo":{"auth":"` + a + `"},"quay.io/org":{"auth":"` + a + `"}}}`,
		`{"auths":{"quay.io":{}},"credsStore":"desktop","credHelpers":{"gcr.io":"gcloud"}}`,
		`{"auths":{"q.io":{"username":"u","password":"p"}}}`,
		`{"auths":{"q.io":{"auth":"bm9jb2xvbg=="}}}`,
		`{"auths":{"q.io":{"auth":42}}}`,
		`{"auths":{"q.io":{"auth":"` + a + `"}}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		af, err := parseAuthFile(data)
		if err != nil {
			for _, s := range secrets(data) {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("error %q quotes the secret %q", err, s)
				}
			}
			return
		}
		for key, e := range af.Auths {
			if e.Auth == "" {
				continue
			}
			dec, err := base64.StdEncoding.DecodeString(e.Auth)
			if err != nil || !strings.Contains(string(dec), ":") {
				t.Fatalf("accepted entry %q whose auth is not base64 of user:password", key)
			}
		}
	})
}

// fixedText is what the checker's errors say besides keys and offsets: a
// secret that happens to be part of it is not a leak.
const fixedText = `not a docker config.json: empty or truncated invalid JSON at byte
field is not a string JSON object auths entry with an empty key username and password
without auth (base64 of user:password), which containers/image ignores auth is not
base64 of user:password credHelpers entry empty helper name`

// secrets are the auth, password and identity-token values of data (when
// it decodes that far) long enough to be recognisable and not also used as
// a key, which errors do name.
func secrets(data []byte) []string {
	var f struct {
		Auths map[string]map[string]any `json:"auths"`
	}
	if json.Unmarshal(data, &f) != nil {
		return nil
	}
	var out []string
	for key, e := range f.Auths {
		for _, field := range []string{"auth", "password", "identitytoken"} {
			if s, ok := e[field].(string); ok && len(s) >= 6 && !strings.Contains(key, s) && !strings.Contains(fixedText, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
