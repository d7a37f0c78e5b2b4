package prune

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/retention"
)

// TestRepositoriesExpandEachPoolThenAddTheKmodRepositories: a repository
// naming {pool} (kiln-config's) is one repository per pool, in pool
// order; the ModuleDay0s' kmod repositories follow, each once.
func TestRepositoriesExpandEachPoolThenAddTheKmodRepositories(t *testing.T) {
	md := kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: "kmm", Name: "nvidia"}}
	md.Spec.OSMapping.ContainerImage = "registry.example.com/os-worker:kmod"
	md.Spec.OSMapping.Sign = &kmmv1beta1.Sign{UnsignedImage: "registry.example.com/kmods/raw:v1"}
	cl := retention.Cluster{
		Pools: []mcfgv1.MachineConfigPool{
			{ObjectMeta: metav1.ObjectMeta{Name: "worker"}}, {ObjectMeta: metav1.ObjectMeta{Name: "infra"}},
		},
		ModuleDay0s: []kmmv1beta1.ModuleDay0{md},
	}
	c := Config{Repos: []string{"registry.example.com/os-{pool}", "registry.example.com/shared"}}
	got, err := c.repositories(cl)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"registry.example.com/os-infra", "registry.example.com/os-worker", "registry.example.com/shared", "registry.example.com/kmods/raw"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("repositories (-want +got):\n%s", d)
	}
}
