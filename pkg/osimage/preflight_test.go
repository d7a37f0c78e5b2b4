package osimage

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

func TestPreflight(t *testing.T) {
	reg := env.StartRegistry(t, env.RegistryOptions{})
	payload := imagetest.PushBase(t, reg.Host, "ocp/rhcos:4.18", 2)
	extra, _ := random.Layer(1024, "")
	derived, err := mutate.AppendLayers(payload, extra)
	if err != nil {
		t.Fatal(err)
	}
	push := func(repoTag string) {
		if err := remote.Write(imagetest.MustRef(t, reg.Host+"/"+repoTag), derived); err != nil {
			t.Fatal(err)
		}
	}
	push("custom/good:1")
	cf, _ := derived.ConfigFile()
	cfg := cf.Config
	cfg.Labels = map[string]string{VersionLabel: "9.4.0"}
	oldOS, _ := mutate.Config(derived, cfg)
	if err := remote.Write(imagetest.MustRef(t, reg.Host+"/custom/old:1"), oldOS); err != nil {
		t.Fatal(err)
	}
	imagetest.PushBase(t, reg.Host, "custom/unrelated:1", 3)

	r := registry.Remote{Insecure: []string{reg.Host}}
	tests := []struct {
		custom, want string
	}{
		{custom: "custom/good:1"},
		{custom: "custom/old:1", want: `OS version "9.4.0"`},
		{custom: "custom/unrelated:1", want: "layer 0 is"},
		{custom: "custom/missing:1", want: "not found"},
	}
	for _, tc := range tests {
		t.Run(tc.custom, func(t *testing.T) {
			err := Preflight(context.Background(), r, reg.Host+"/ocp/rhcos:4.18", reg.Host+"/"+tc.custom)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.custom)):
				t.Fatalf("error %v: want one naming %s and saying %q", err, tc.custom, tc.want)
			}
		})
	}
}
