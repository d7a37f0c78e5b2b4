package retention

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	repo = "registry.example.com/kiln/os"
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hexB = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	hexC = "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
	hexD = "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
	hexE = "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"
)

func img(hex string) string { return repo + "@sha256:" + hex }

func rendered(name, pool, image string, age time.Duration) mcfgv1.MachineConfig {
	mc := mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age)),
	}}
	if pool != "" {
		mc.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineConfigPool", Name: pool}}
	}
	mc.Spec.OSImageURL = image
	return mc
}

func pool(name, current, desired string) mcfgv1.MachineConfigPool {
	p := mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	p.Status.Configuration.Name = current
	p.Spec.Configuration.Name = desired
	return p
}

func TestNamedImagesListsEveryImageTheClusterNeedsWithItsReason(t *testing.T) {
	kilnMC := mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{
		Name: "99-kiln-worker-os-image", Annotations: map[string]string{PreviousImageAnnot: img(hexB)},
	}}
	kilnMC.Spec.OSImageURL = img(hexC)
	mcn := mcfgv1.MachineConfigNode{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}
	mcn.Spec.ConfigImage.DesiredImage = mcfgv1.ImageDigestFormat(img(hexD))
	mcn.Status.ConfigImage.CurrentImage = mcfgv1.ImageDigestFormat(img(hexC))
	cases := []struct {
		name    string
		cluster Cluster
		perPool int
		want    []Named
	}{
		{
			name: "pool current and desired, kiln's MC and its rollback target, a node, a live run",
			cluster: Cluster{
				Pools: []mcfgv1.MachineConfigPool{pool("worker", "rendered-worker-1", "rendered-worker-2")},
				MachineConfigs: []mcfgv1.MachineConfig{
					rendered("rendered-worker-1", "worker", img(hexA), 2*time.Hour),
					rendered("rendered-worker-2", "worker", img(hexC), time.Hour),
					kilnMC,
				},
				Nodes: []mcfgv1.MachineConfigNode{mcn},
				Live:  []string{img(hexE)},
			},
			perPool: 0,
			want: []Named{
				{img(hexA), "pool worker: current rendered config rendered-worker-1"},
				{img(hexC), "pool worker: desired rendered config rendered-worker-2"},
				{img(hexC), "MachineConfig 99-kiln-worker-os-image: osImageURL"},
				{img(hexB), "MachineConfig 99-kiln-worker-os-image: rollback target (kiln.dev/previous-image)"},
				{img(hexD), "MachineConfigNode node-1: desired image"},
				{img(hexC), "MachineConfigNode node-1: current image"},
				{img(hexE), "a live run's image"},
			},
		},
		{
			name: "the last N distinct images of a pool's rendered configs, newest first; older ones and other pools' are not",
			cluster: Cluster{
				Pools: []mcfgv1.MachineConfigPool{pool("worker", "", "")},
				MachineConfigs: []mcfgv1.MachineConfig{
					rendered("rendered-worker-old", "worker", img(hexA), 5*time.Hour),
					rendered("rendered-worker-b1", "worker", img(hexB), 4*time.Hour),
					rendered("rendered-worker-b2", "worker", img(hexB), 3*time.Hour),
					rendered("rendered-worker-c", "worker", img(hexC), 2*time.Hour),
					rendered("rendered-infra-d", "infra", img(hexD), time.Hour),
				},
			},
			perPool: 2,
			want: []Named{
				{img(hexC), "pool worker: rendered config rendered-worker-c, one of its 2 most recent"},
				{img(hexB), "pool worker: rendered config rendered-worker-b2, one of its 2 most recent"},
			},
		},
		{
			name: "a rendered config without owner references belongs to the pool its name names",
			cluster: Cluster{
				Pools: []mcfgv1.MachineConfigPool{pool("worker-gpu", "", "")},
				MachineConfigs: []mcfgv1.MachineConfig{
					rendered("rendered-worker-gpu-0123abcd", "", img(hexA), time.Hour),
				},
			},
			perPool: 3,
			want: []Named{
				{img(hexA), "pool worker-gpu: rendered config rendered-worker-gpu-0123abcd, one of its 3 most recent"},
			},
		},
		{
			name: "every PinnedImageSet's images, kiln's staged upgrade image or anyone's, in set name order",
			cluster: Cluster{
				PinnedImageSets: []mcfgv1.PinnedImageSet{
					{ObjectMeta: metav1.ObjectMeta{Name: "user-set"}, Spec: mcfgv1.PinnedImageSetSpec{
						PinnedImages: []mcfgv1.PinnedImageRef{{Name: mcfgv1.ImageDigestFormat(img(hexB))}, {Name: mcfgv1.ImageDigestFormat(img(hexC))}},
					}},
					{ObjectMeta: metav1.ObjectMeta{Name: "kiln-worker-4.19.3-0a1b"}, Spec: mcfgv1.PinnedImageSetSpec{
						PinnedImages: []mcfgv1.PinnedImageRef{{Name: mcfgv1.ImageDigestFormat(img(hexA))}},
					}},
				},
			},
			perPool: 3,
			want: []Named{
				{img(hexA), "PinnedImageSet kiln-worker-4.19.3-0a1b: pinned on its pools' nodes"},
				{img(hexB), "PinnedImageSet user-set: pinned on its pools' nodes"},
				{img(hexC), "PinnedImageSet user-set: pinned on its pools' nodes"},
			},
		},
		{
			name: "a pool whose rendered config is missing, and configs without an image, name nothing",
			cluster: Cluster{
				Pools:          []mcfgv1.MachineConfigPool{pool("worker", "rendered-worker-gone", "")},
				MachineConfigs: []mcfgv1.MachineConfig{{ObjectMeta: metav1.ObjectMeta{Name: "99-worker-ssh"}}},
			},
			perPool: 3,
			want:    nil,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, NamedImages(c.cluster, c.perPool)); d != "" {
				t.Errorf("NamedImages (-want +got):\n%s", d)
			}
		})
	}
}
