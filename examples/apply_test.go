package examples

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/test/env"
)

// TestManifestsApplyToAPIServer creates every object of examples/cluster
// on a real kube-apiserver with the OpenShift and kiln CRDs, as the e2e
// applies it: the CRDs' schemas and CEL rules accept each object, statuses
// (ClusterVersion, Infrastructure) go through the status subresource, and
// render then reads the same cluster as it read the folder.
func TestManifestsApplyToAPIServer(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	for _, ns := range []string{"openshift-machine-api", "openshift-machine-config-operator", "openshift-kmm"} {
		if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range loadAll(t) {
		obj, ok := o.(client.Object)
		if !ok {
			t.Fatalf("%T is not a client.Object", o)
		}
		status := StatusOf(obj)
		if err := k.Client.Create(ctx, obj); err != nil {
			t.Errorf("creating %T %s/%s: %v", o, obj.GetNamespace(), obj.GetName(), err)
			continue
		}
		if status != nil {
			if err := k.Client.Status().Update(ctx, status(obj)); err != nil {
				t.Errorf("writing status of %T %s: %v", o, obj.GetName(), err)
			}
		}
	}
	fromDir, err := mcrender.LoadDir(clusterDir)
	if err != nil {
		t.Fatal(err)
	}
	fromAPI, err := mcrender.LoadCluster(ctx, k.Client)
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range []string{"infra", "worker", "master"} {
		a, err := render.Run(ctx, fromDir, pool, &render.Fetcher{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := render.Run(ctx, fromAPI, pool, &render.Fetcher{}, nil)
		if err != nil {
			t.Fatalf("render %s from the apiserver: %v", pool, err)
		}
		if a.Result.Config.Name != b.Result.Config.Name || a.Results["BASE_IMAGE"] != b.Results["BASE_IMAGE"] || a.Results["HAS_KMOD"] != b.Results["HAS_KMOD"] {
			t.Errorf("pool %s: folder renders %s %v, apiserver %s %v", pool, a.Result.Config.Name, a.Results, b.Result.Config.Name, b.Results)
		}
	}
}
