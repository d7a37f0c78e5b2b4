package retention

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/trust"
)

const kmodRepo = "registry.example.com/kmods/nvidia"

func moduleDay0(name, image string, sign *kmmv1beta1.Sign) kmmv1beta1.ModuleDay0 {
	md := kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: "kmm", Name: name}}
	md.Spec.OSMapping.ContainerImage = image
	md.Spec.OSMapping.Sign = sign
	return md
}

func TestDecideDeletesAKmodImageOnlyOnceNoTagNamesItAndItWasAttestedForItsRepository(t *testing.T) {
	build := trust.Inputs{BuildType: trust.BuildTypeKmodBuild, Parameters: map[string]string{"format": trust.KmodBuildFormat, "target": kmodRepo + ":v1-unsigned"}}
	signed := trust.Inputs{BuildType: trust.BuildTypeKmodSign, Parameters: map[string]string{"format": trust.KmodSignFormat, "target": kmodRepo + ":v1"}}
	elsewhere := trust.Inputs{BuildType: trust.BuildTypeKmodSign, Parameters: map[string]string{"format": trust.KmodSignFormat, "target": "registry.example.com/other:v1"}}
	keep := Set{"sha256:" + hexA: {"ModuleDay0 kmm/nvidia: spec.osMapping.containerImage"}}
	cand := func(d string, tags []string, ins ...trust.Inputs) Candidate {
		return Candidate{Repo: kmodRepo, Digest: "sha256:" + d, Tags: tags, Inputs: ins}
	}
	cases := []struct {
		name       string
		c          Candidate
		wantDelete bool
		wantReason string
	}{
		{"a signed kmod image the tag moved away from", cand(hexB, nil, signed),
			true, "kiln's kmod image, no longer tagged, needed by nothing in the keep set"},
		{"an unsigned kmod build the -unsigned tag moved away from", cand(hexC, nil, build),
			true, "kiln's kmod image, no longer tagged, needed by nothing in the keep set"},
		{"the image the containerImage tag names now", cand(hexA, []string{"v1"}, signed),
			false, "kept: ModuleDay0 kmm/nvidia: spec.osMapping.containerImage"},
		{"a tag names it though the keep set does not", cand(hexB, []string{"v1"}, signed),
			false, "tag v1 names it: a kmod image goes only once no tag but kiln's own names it"},
		{"attested for another repository", cand(hexB, nil, elsewhere),
			false, "kiln attested it for [registry.example.com/other:v1], not for repository " + kmodRepo},
		{"not verified with kiln's key", Candidate{Repo: kmodRepo, Digest: "sha256:" + hexB, Unverified: "no signature verified"},
			false, "not signed and attested with kiln's key: no signature verified"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Decide(keep, []string{kmodRepo}, []Candidate{c.c})
			want := []Decision{{Candidate: c.c, Delete: c.wantDelete, Reason: c.wantReason}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Decide (-want +got):\n%s", d)
			}
		})
	}
}

func TestKmodRepositoriesAreTheContainerImageAndUnsignedImageRepositories(t *testing.T) {
	cases := []struct {
		name    string
		mds     []kmmv1beta1.ModuleDay0
		want    []string
		wantErr string
	}{
		{
			name: "containerImage, an explicit unsigned image elsewhere, a derived one in the same repository, each once",
			mds: []kmmv1beta1.ModuleDay0{
				moduleDay0("a", kmodRepo+":v1", &kmmv1beta1.Sign{UnsignedImage: "registry.example.com/kmods/raw:v1"}),
				moduleDay0("b", kmodRepo+":v2", &kmmv1beta1.Sign{}),
				moduleDay0("c", "registry.example.com/kmods/plain@sha256:"+hexA, nil),
			},
			want: []string{kmodRepo, "registry.example.com/kmods/plain", "registry.example.com/kmods/raw"},
		},
		{
			name:    "a reference that does not parse names the ModuleDay0 and the field",
			mds:     []kmmv1beta1.ModuleDay0{moduleDay0("a", kmodRepo+":v1", &kmmv1beta1.Sign{UnsignedImage: "Registry/UPPER:x"})},
			wantErr: `ModuleDay0 kmm/a: spec.osMapping.sign.unsignedImage "Registry/UPPER:x": `,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := KmodRepositories(c.mds)
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
				t.Errorf("KmodRepositories (-want +got):\n%s", d)
			}
		})
	}
}

func TestNamedImagesKeepWhatEachModuleDay0NamesNow(t *testing.T) {
	applied := moduleDay0("nvidia", kmodRepo+":v1", &kmmv1beta1.Sign{})
	applied.Status.ImageDigest = "sha256:" + hexA
	given := moduleDay0("given", "registry.example.com/kmods/x:v2", &kmmv1beta1.Sign{UnsignedImage: "registry.example.com/kmods/raw:v2"})
	plain := moduleDay0("plain", "registry.example.com/kmods/plain:v3", nil)
	got := NamedImages(Cluster{ModuleDay0s: []kmmv1beta1.ModuleDay0{plain, applied, given}}, 3)
	want := []Named{
		{"registry.example.com/kmods/x:v2", "ModuleDay0 kmm/given: spec.osMapping.containerImage"},
		{"registry.example.com/kmods/raw:v2", "ModuleDay0 kmm/given: the unsigned image"},
		{kmodRepo + ":v1", "ModuleDay0 kmm/nvidia: spec.osMapping.containerImage"},
		{kmodRepo + ":v1-unsigned", "ModuleDay0 kmm/nvidia: the unsigned image"},
		{kmodRepo + "@sha256:" + hexA, "ModuleDay0 kmm/nvidia: status.imageDigest, the image last applied"},
		{"registry.example.com/kmods/plain:v3", "ModuleDay0 kmm/plain: spec.osMapping.containerImage"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("NamedImages (-want +got):\n%s", d)
	}
}
