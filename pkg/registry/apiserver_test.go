package registry_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestMirrorScopesAgreeWithAPIServer holds FromCluster's checks of mirror
// sources and mirrors to the apiserver's (the openshift/api CRD patterns):
// directory mode refuses exactly what a cluster would refuse.
func TestMirrorScopesAgreeWithAPIServer(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	candidates := []string{
		"quay.io", "quay.io/team/app", "quay.io:5000/team", "registry", "localhost:5000/x", "10.0.0.1:5000/ocp",
		"QUAY.io/team", "quay.io/a__b/c-d/e.f", "quay.io/a---b",
		"*.example.com", "*.a-b.example.com",
		"*.example.com/x", "*.example.com:80", "*example.com", "quay.*.io", "https://quay.io", "quay.io/Team",
		"quay.io/team:tag", "quay.io/team@sha256:" + strings.Repeat("0", 64), "quay.io/", "quay.io//x", "-quay.io",
		"quay.io/a_", "[::1]:5000/x", "quay.io/a/", "",
	}
	for i, s := range candidates {
		for _, role := range []string{"source", "mirror"} {
			t.Run(fmt.Sprintf("%s %q", role, s), func(t *testing.T) {
				entry := configv1.ImageDigestMirrors{Source: "quay.io/team", Mirrors: []configv1.ImageMirror{configv1.ImageMirror(s)}}
				if role == "source" {
					entry = configv1.ImageDigestMirrors{Source: s, Mirrors: []configv1.ImageMirror{"mirror.example.com/team"}}
				}
				obj := &configv1.ImageDigestMirrorSet{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", role, i)},
					Spec:       configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{entry}},
				}
				apiErr := k.Client.Create(ctx, obj.DeepCopy())
				_, kilnErr := registry.FromCluster(registry.ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{*obj}})
				if (apiErr == nil) != (kilnErr == nil) {
					t.Fatalf("apiserver: %v\nkiln: %v", apiErr, kilnErr)
				}
			})
		}
	}
}
