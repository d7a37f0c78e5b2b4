package sign

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

func TestVerifyPolicy(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys := newKeys(t, "pw")
	signed := pushImage(t, reg.Host, "kiln/os:v1")
	if _, err := Sign(ctx, r, SignInput{Image: signed, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host)}); err != nil {
		t.Fatal(err)
	}
	unsigned := pushImage(t, reg.Host, "kiln/os:unsigned")

	check := func(image, keyPath string) error {
		out := t.TempDir()
		files, err := VerifyPolicy(ctx, PolicyInput{Image: image, KeyPath: keyPath, Insecure: true, OutDir: out})
		if files == nil {
			t.Fatalf("no policy fragment written (err %v)", err)
		}
		return err
	}
	if err := check(signed, keys.pubPath); err != nil {
		t.Fatalf("signed image refused: %v", err)
	}
	if err := check(reg.Host+"/kiln/os:v1", keys.pubPath); err != nil {
		t.Fatalf("signed image by tag refused: %v", err)
	}

	otherKey := newKeys(t, "other")
	tests := []struct {
		name, image, key, want string
		before                 func()
	}{
		{name: "unsigned", image: unsigned, key: keys.pubPath, want: "no sigstore signature"},
		{name: "wrong key", image: signed, key: otherKey.pubPath, want: "does not verify with this key"},
		{name: "tampered tag", image: reg.Host + "/kiln/os:v1", key: keys.pubPath, want: "no sigstore signature",
			before: func() { pushImage(t, reg.Host, "kiln/os:v1") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			err := check(tc.image, tc.key)
			t.Logf("refusal: %v", err)
			if !errors.Is(err, ErrPolicy) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want a policy refusal saying %q", err, tc.want)
			}
		})
	}
}

func TestPolicyFragment(t *testing.T) {
	out := t.TempDir()
	files, err := writeFragments(out, "quay.io/org/os", DefaultNodeKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(files.Policy)
	var p struct {
		Transports map[string]map[string][]map[string]any `json:"transports"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	req := p.Transports["docker"]["quay.io/org/os"]
	if len(req) != 1 || req[0]["type"] != "sigstoreSigned" || req[0]["keyPath"] != DefaultNodeKeyPath {
		t.Errorf("policy fragment: %s", b)
	}
	r, _ := os.ReadFile(files.Registries)
	if !strings.Contains(string(r), "quay.io/org/os:\n    use-sigstore-attachments: true") {
		t.Errorf("registries.d fragment: %s", r)
	}
}

// TestVerifyPolicyIndex signs a multi-platform index (heterogeneous pools)
// and checks it passes, and a child manifest signed by nobody does not.
func TestVerifyPolicyIndex(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	ctx := context.Background()
	r := registry.Remote{Insecure: []string{reg.Host}}
	keys := newKeys(t, "pw")
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(reg.Host+"/kiln/multi:1", name.Insecure)
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	image := ref.Context().Digest(d.String()).String()
	if _, err := Sign(ctx, r, SignInput{Image: image, Key: keys.priv, Password: keys.pass, Inputs: testInputs(t, reg.Host)}); err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyPolicy(ctx, PolicyInput{Image: image, KeyPath: keys.pubPath, Insecure: true, OutDir: t.TempDir()}); err != nil {
		t.Fatalf("signed index refused: %v", err)
	}
	im, _ := idx.IndexManifest()
	child := ref.Context().Digest(im.Manifests[0].Digest.String()).String()
	if _, err := VerifyPolicy(ctx, PolicyInput{Image: child, KeyPath: keys.pubPath, Insecure: true, OutDir: t.TempDir()}); !errors.Is(err, ErrPolicy) {
		t.Fatalf("unsigned child manifest: %v", err)
	}
}
