package release

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	signlib "github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// The SLSA buildType and build format of a release image's provenance.
const (
	BuildTypeRelease = "https://kiln.dev/build/release-image/v1"
	ReleaseFormat    = "kiln-release/1"
)

// Published is what Publish pushed: each image by digest, and where its
// signature and provenance are. It is what `make images` writes and
// `make install` reads.
type Published struct {
	Tag     string `json:"tag"`
	Trigger Pushed `json:"trigger"`
	Steps   Pushed `json:"steps"`
}

// Pushed is one pushed image.
type Pushed struct {
	// Image is repository@sha256:….
	Image       string `json:"image"`
	Signature   string `json:"signature"`
	Attestation string `json:"attestation"`
}

// Signer turns an image and its build inputs into what signlib.Sign needs:
// signlib.AttestOptions.Input, which reads the cosign key or sets up
// keyless signing as every kiln step does.
type Signer func(image string, in trust.Inputs) (signlib.SignInput, error)

// Source is what the provenance says the images were built from.
type Source struct {
	// Revision is the checkout's commit; Modified says the work tree
	// differed from it.
	Revision string
	Modified bool
}

// SourceOf reads root's git commit and whether its tree is modified.
func SourceOf(ctx context.Context, root string) (Source, error) {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return Source{}, fmt.Errorf("reading the checkout's commit (git rev-parse HEAD in %s): %w", root, err)
	}
	status, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return Source{}, fmt.Errorf("reading the checkout's status (git status in %s): %w", root, err)
	}
	return Source{Revision: strings.TrimSpace(string(out)), Modified: len(strings.TrimSpace(string(status))) > 0}, nil
}

// tagRE is the OCI distribution spec's tag grammar
// (https://github.com/opencontainers/distribution-spec/blob/main/spec.md#pulling-manifests).
var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

// CheckTag refuses a tag that is not a valid image tag.
func CheckTag(tag string) error {
	if !tagRE.MatchString(tag) {
		return fmt.Errorf("release tag %q: not an image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", tag)
	}
	return nil
}

// CheckRepository refuses a REGISTRY that is not host[:port][/namespace…]
// as an image repository prefix.
func CheckRepository(r registry.Remote, repo string) (name.Repository, error) {
	if repo == "" || strings.HasSuffix(repo, "/") {
		return name.Repository{}, fmt.Errorf("registry %q: want host[:port]/namespace, such as quay.io/me", repo)
	}
	return r.ParseRepo(repo + "/" + StepsName)
}

// Inputs are a release image's provenance inputs: its name, tag, platform
// and source, and for kiln-steps the base layer by digest.
func Inputs(image, tag string, p Platform, src Source, base *v1.Hash) trust.Inputs {
	in := trust.Inputs{BuildType: BuildTypeRelease, Parameters: map[string]string{
		"format": ReleaseFormat, "image": image, "tag": tag, "platform": p.String(),
		"source": "git+https://github.com/kiln-dev/kiln@" + src.Revision, "modified": fmt.Sprint(src.Modified),
	}}
	if base != nil {
		in.Dependencies = []trust.Dependency{{Name: "steps-base", Digest: base.String()}}
	}
	return in
}

// Publish pushes both images to repo/<name>:tag, signs each by digest and
// attaches its SLSA v1 provenance. Both are signed only after both pushes
// succeeded, and nothing is signed when the signer cannot read its key.
func Publish(ctx context.Context, r registry.Remote, repo, tag string, p Platform, src Source, imgs Images, sign Signer) (*Published, error) {
	if err := CheckTag(tag); err != nil {
		return nil, err
	}
	if _, err := CheckRepository(r, repo); err != nil {
		return nil, err
	}
	layers, err := imgs.Steps.Layers()
	if err != nil || len(layers) == 0 {
		return nil, fmt.Errorf("reading the %s image's base layer: %v", StepsName, err)
	}
	base, err := layers[0].Digest()
	if err != nil {
		return nil, fmt.Errorf("reading the %s image's base layer: %w", StepsName, err)
	}
	out := &Published{Tag: tag}
	todo := []job{{TriggerName, imgs.Trigger, nil, &out.Trigger}, {StepsName, imgs.Steps, &base, &out.Steps}}
	inputs := make([]signlib.SignInput, len(todo))
	for i, x := range todo {
		d, err := x.img.Digest()
		if err != nil {
			return nil, fmt.Errorf("hashing the %s image: %w", x.name, err)
		}
		x.out.Image = repo + "/" + x.name + "@" + d.String()
		// The key is read before any push: no unsigned image is left
		// behind by a missing key.
		if inputs[i], err = sign(x.out.Image, Inputs(x.name, tag, p, src, x.base)); err != nil {
			return nil, fmt.Errorf("signing %s: %w", x.name, err)
		}
	}
	for _, x := range todo {
		ref, err := r.ParseRef(repo + "/" + x.name + ":" + tag)
		if err != nil {
			return nil, err
		}
		if err := r.PushImage(ctx, ref, x.img); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", ref, err)
		}
	}
	for i, x := range todo {
		res, err := signlib.Sign(ctx, r, inputs[i])
		if err != nil {
			return nil, fmt.Errorf("signing %s: %w", x.out.Image, err)
		}
		x.out.Signature, x.out.Attestation = res.SignatureRef, res.AttestationRef
	}
	return out, nil
}

// job is one image Publish pushes and signs.
type job struct {
	name string
	img  v1.Image
	base *v1.Hash
	out  *Pushed
}

// WriteFiles writes p as dir/images.json (what Install reads) and
// dir/images.env (shell variables KILN_TRIGGER_IMAGE, KILN_STEPS_IMAGE).
func (p *Published) WriteFiles(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing the release files: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "images.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the release files: %w", err)
	}
	env := fmt.Sprintf("KILN_RELEASE_TAG=%s\nKILN_TRIGGER_IMAGE=%s\nKILN_STEPS_IMAGE=%s\n", p.Tag, p.Trigger.Image, p.Steps.Image)
	if err := os.WriteFile(filepath.Join(dir, "images.env"), []byte(env), 0o644); err != nil {
		return fmt.Errorf("writing the release files: %w", err)
	}
	return nil
}

// maxPublished caps images.json.
const maxPublished = 64 << 10

// ReadPublished reads images.json as WriteFiles wrote it and checks that
// both images are named by digest.
func ReadPublished(path string) (*Published, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s (run make images first): %w", path, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxPublished {
		return nil, fmt.Errorf("reading %s: must be a regular file of at most %d bytes", path, maxPublished)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var p Published
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if err := CheckTag(p.Tag); err != nil {
		return nil, fmt.Errorf("reading %s: field tag: %w", path, err)
	}
	for field, img := range map[string]string{"trigger.image": p.Trigger.Image, "steps.image": p.Steps.Image} {
		if _, err := name.NewDigest(img); err != nil {
			return nil, fmt.Errorf("reading %s: field %s %q: must be repository@sha256:…: %w", path, field, img, err)
		}
	}
	return &p, nil
}
