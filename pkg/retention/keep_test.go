package retention

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/trust"
)

func TestResolveKeepsDigestsAndResolvesTags(t *testing.T) {
	tags := map[string]string{repo + ":latest": "sha256:" + hexB, repo + ":gone": ""}
	resolve := func(ref string) (string, error) {
		d, ok := tags[ref]
		if !ok {
			return "", errors.New("registry unreachable")
		}
		return d, nil
	}
	cases := []struct {
		name    string
		named   []Named
		want    Set
		wantErr string
	}{
		{
			name:  "by digest, by tag, the same digest twice, a tag naming nothing",
			named: []Named{{img(hexA), "r1"}, {repo + ":latest", "r2"}, {img(hexA), "r3"}, {repo + ":gone", "r4"}},
			want:  Set{"sha256:" + hexA: {"r1", "r3"}, "sha256:" + hexB: {"r2"}},
		},
		{
			name:    "a tag that cannot be resolved fails the whole set",
			named:   []Named{{img(hexA), "r1"}, {repo + ":other", "pool worker: current"}},
			wantErr: `resolving the image "registry.example.com/kiln/os:other" (pool worker: current): registry unreachable`,
		},
		{
			name:    "a malformed digest names the image and the reason",
			named:   []Named{{repo + "@sha256:abc", "MachineConfig x: osImageURL"}},
			wantErr: `reading the image "registry.example.com/kiln/os@sha256:abc" (MachineConfig x: osImageURL): digest "sha256:abc"`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.named, resolve)
			if c.wantErr != "" {
				if err == nil || !containsPrefix(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want it to start with %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("Resolve (-want +got):\n%s", d)
			}
		})
	}
}

func containsPrefix(s, p string) bool { return len(s) >= len(p) && s[:len(p)] == p }

func TestExpandKeepsWhatKeptImagesWereBuiltFromTransitively(t *testing.T) {
	node := trust.Inputs{BuildType: trust.BuildTypeNodeImage, Dependencies: []trust.Dependency{
		{Name: "base-image", URI: "oci://quay.io/base", Digest: "sha256:" + hexB},
		{Name: "kmod-image", Digest: "sha256:" + hexC},
	}}
	signedKmod := trust.Inputs{BuildType: trust.BuildTypeKmodSign, Parameters: map[string]string{
		"unsignedImage": "registry.example.com/kmod@sha256:" + hexD,
	}}
	cases := []struct {
		name string
		keep Set
		prov map[string][]trust.Inputs
		want Set
	}{
		{
			name: "node image to its base and kmod image, the kmod image to its unsigned build",
			keep: Set{"sha256:" + hexA: {"pool worker: current"}},
			prov: map[string][]trust.Inputs{"sha256:" + hexA: {node}, "sha256:" + hexC: {signedKmod}},
			want: Set{
				"sha256:" + hexA: {"pool worker: current"},
				"sha256:" + hexB: {"base-image of kept sha256:aaaaaaaaaaaa"},
				"sha256:" + hexC: {"kmod-image of kept sha256:aaaaaaaaaaaa"},
				"sha256:" + hexD: {"unsigned kmod image of kept sha256:cccccccccccc"},
			},
		},
		{
			name: "an image that is not kept lends its inputs nothing",
			keep: Set{"sha256:" + hexE: {"live"}},
			prov: map[string][]trust.Inputs{"sha256:" + hexA: {node}},
			want: Set{"sha256:" + hexE: {"live"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.keep.Expand(c.prov)
			if d := cmp.Diff(c.want, c.keep); d != "" {
				t.Errorf("Expand (-want +got):\n%s", d)
			}
		})
	}
}

func TestFreedCountsOnlyBlobsNoKeptManifestReferences(t *testing.T) {
	base := "sha256:" + hexB
	cases := []struct {
		name          string
		deleted, kept []Manifest
		want          int64
	}{
		{
			name:    "a shared base layer is not freed; a layer two deleted images share counts once",
			deleted: []Manifest{{Digest: "m1", Blobs: map[string]int64{"m1": 5, base: 100, "l1": 10, "c1": 1}}, {Digest: "m2", Blobs: map[string]int64{"m2": 6, "l1": 10, "c2": 2}}},
			kept:    []Manifest{{Digest: "k", Blobs: map[string]int64{"k": 7, base: 100}}},
			want:    5 + 10 + 1 + 6 + 2,
		},
		{
			name: "nothing deleted frees nothing",
			kept: []Manifest{{Digest: "k", Blobs: map[string]int64{"k": 7}}},
			want: 0,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Freed(c.deleted, c.kept); got != c.want {
				t.Errorf("Freed = %d, want %d", got, c.want)
			}
		})
	}
}
