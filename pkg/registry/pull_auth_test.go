package registry_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
)

const mirrorRepo, mirrorUser, mirrorPass = "mirror/rhcos", "mirror-reader", "mirror-pass"

// TestEveryRegistryCallCarriesItsRepositorysCredential makes each call
// kiln reads and writes with (base and kmod pulls, verify and rollout
// reads, signature and attestation writes through Options, pulls through
// a mirror) against docker-registry behind a front that lets each user
// into its own repositories only, with an auth file of repository-scoped
// entries only. Each call must succeed, reach the repositories it names,
// and carry each one's own credential.
func TestEveryRegistryCallCarriesItsRepositorysCredential(t *testing.T) {
	isolate(t)
	users := map[string]string{baseUser: basePass, targetUser: targetPass, mirrorUser: mirrorPass}
	acl := map[string][]string{baseRepo: {baseUser}, targetRepo: {targetUser}, mirrorRepo: {mirrorUser}}
	f := startACLFront(t, users, acl, false)
	authFile := writeAuthFile(t, filepath.Join(t.TempDir(), "auth.json"), auths(map[string]map[string]string{
		f.host + "/" + baseRepo:   entry(baseUser, basePass),
		f.host + "/kiln":          entry(targetUser, targetPass),
		f.host + "/" + mirrorRepo: entry(mirrorUser, mirrorPass),
	}))
	r := registry.Remote{AuthFile: authFile, Insecure: []string{f.host}, Backoff: remote.Backoff{Steps: 1}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := func(s string) name.Reference {
		p, err := r.ParseRef(f.host + "/" + s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	img, err := random.Image(1024, 2)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := random.Index(512, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	digest, _ := img.Digest()
	mirrored := mirrorConfig(t, f.host)

	cases := []struct {
		name  string
		call  func() error
		repos []string // the repositories the call reaches, sorted
	}{
		{"Write the base", func() error { return r.Write(ctx, ref(baseRepo+":4.18"), img) }, []string{baseRepo}},
		{"Write the mirror", func() error { return r.Write(ctx, ref(mirrorRepo+":copy"), img) }, []string{mirrorRepo}},
		{"WriteIndex", func() error { return r.WriteIndex(ctx, ref(targetRepo+":index"), idx) }, []string{targetRepo}},
		{"PushIndex", func() error { return r.PushIndex(ctx, ref(targetRepo+":pushed"), idx) }, []string{targetRepo}},
		{"Tag", func() error { return r.Tag(ctx, ref(targetRepo+":index").(name.Tag), idx) }, []string{targetRepo}},
		{"Get", func() error { _, err := r.Get(ctx, ref(baseRepo+":4.18")); return err }, []string{baseRepo}},
		{"Head", func() error { _, err := r.Head(ctx, ref(baseRepo+":4.18")); return err }, []string{baseRepo}},
		{"Image and its layers", func() error { return readImage(r.Image(ctx, ref(baseRepo+":4.18"))) }, []string{baseRepo}},
		{"Index", func() error { _, err := r.Index(ctx, ref(targetRepo+":index")); return err }, []string{targetRepo}},
		{"HeadNamed", func() error { _, err := r.HeadNamed(ctx, ref(targetRepo+":pushed")); return err }, []string{targetRepo}},
		{"ImageNamed", func() error {
			return readImage(r.ImageNamed(ctx, ref(targetRepo+"@"+firstChild(t, idx).String())))
		}, []string{targetRepo}},
		{"Options, as signing writes a signature", func() error {
			opts, err := r.Options(ctx)
			if err != nil {
				return err
			}
			return remote.Write(ref(targetRepo+":sha256-abc.sig"), img, opts...)
		}, []string{targetRepo}},
		{"Image through a mirror", func() error {
			m := r
			m.Config = mirrored
			return readImage(m.Image(ctx, ref("openshift/rhcos@"+digest.String())))
		}, []string{mirrorRepo}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.requests()
			if err := c.call(); err != nil {
				t.Fatal(err)
			}
			reqs, _ := f.requests()
			checkCredentials(t, reqs)
			var repos []string
			for _, q := range reqs {
				if !slices.Contains(repos, q.Repo) {
					repos = append(repos, q.Repo)
				}
			}
			slices.Sort(repos)
			if diff := cmp.Diff(c.repos, repos); diff != "" {
				t.Errorf("repositories reached (-want +got):\n%s", diff)
			}
		})
	}
}

// mirrorConfig mirrors host/openshift/rhcos (by digest) at host/mirror/rhcos,
// mirror only: the source itself is never asked.
func mirrorConfig(t *testing.T, host string) *registry.Config {
	t.Helper()
	cfg, err := registry.FromCluster(registry.ClusterInputs{IDMS: []configv1.ImageDigestMirrorSet{{
		ObjectMeta: metav1.ObjectMeta{Name: "rhcos"},
		Spec: configv1.ImageDigestMirrorSetSpec{ImageDigestMirrors: []configv1.ImageDigestMirrors{{
			Source:             host + "/" + baseRepo,
			Mirrors:            []configv1.ImageMirror{configv1.ImageMirror(host + "/" + mirrorRepo)},
			MirrorSourcePolicy: configv1.NeverContactSource,
		}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func readImage(img v1.Image, err error) error {
	if err != nil {
		return err
	}
	return readLayers(img)
}

func firstChild(t *testing.T, idx v1.ImageIndex) v1.Hash {
	t.Helper()
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return im.Manifests[0].Digest
}
