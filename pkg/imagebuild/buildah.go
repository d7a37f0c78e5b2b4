package imagebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// BuildahInput adds what only the buildah path uses to a BuildInput.
type BuildahInput struct {
	BuildInput
	ExtensionsImage string
	// Containerfile is the user's content (MachineOSConfig containerFile).
	Containerfile string
}

// BuildWithBuildah builds with `buildah bud --layers --timestamp 0` from a
// generated Containerfile and pushes with BudAndPush. The fingerprint also
// covers the Containerfile, so reuse works as on the fast path (only a
// proven image is reused). The tag is written by the push's final manifest
// PUT, so a failed build or push leaves no tag.
func BuildWithBuildah(ctx context.Context, bb buildah.Buildah, r registry.Remote, in BuildahInput) (*BuildResult, error) {
	p, err := in.prepareBuildah(ctx, r)
	if err != nil {
		return nil, err
	}
	res := p.res
	tag := p.repo.Tag(res.Tag)
	if done, err := res.reuse(ctx, r, tag, in.Identity); err != nil || done {
		return res, err
	}
	dir, err := os.MkdirTemp("", "kiln-buildah-ctx-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	b, err := p.bud(dir, tag.String())
	if err != nil {
		return nil, err
	}
	b.Check = func(img v1.Image) (err error) {
		res.Lint, err = lintImages(map[string]v1.Image{"": img}, res.Plan, in.NodeCache, p.baseLayers)
		return err
	}
	d, err := bb.BudAndPush(ctx, r, b)
	if err != nil {
		return nil, fmt.Errorf("building %s on %s: %w", in.Rendered.Name, in.Base, err)
	}
	res.Digest = d
	res.Ref = p.repo.Digest(res.Digest.String()).String()
	return res, nil
}

// buildahBuild is a prepared buildah-path build: its inputs and its
// generated Containerfile, nothing built yet.
type buildahBuild struct {
	in   BuildahInput
	res  *BuildResult
	repo name.Repository
	bc   *BuildContext
	// ext is the extensions image by digest when the build mounts it.
	ext string
	// baseCount is the number of the base's layers, the bottom layers of
	// what buildah builds FROM it.
	baseCount int
}

// baseLayers is the base's layer count, when the built image has more.
func (p *buildahBuild) baseLayers(img v1.Image) (int, error) {
	m, err := img.Manifest()
	if err != nil {
		return 0, err
	}
	return min(p.baseCount, len(m.Layers)), nil
}

// prepareBuildah plans, resolves the base and generates the Containerfile
// and the inputs; it reads the base's descriptor only.
func (in *BuildahInput) prepareBuildah(ctx context.Context, r registry.Remote) (*buildahBuild, error) {
	plan, err := in.plan()
	if err != nil {
		return nil, err
	}
	baseRef, baseDesc, repo, err := resolve(ctx, r, in.BuildInput)
	if err != nil {
		return nil, err
	}
	if baseDesc.MediaType.IsIndex() {
		// buildah would build the host's platform only and push a
		// single-platform image for a multi-platform base: refuse instead.
		return nil, fmt.Errorf("building %s with buildah: base %s is a multi-platform index; the buildah path builds one platform, use a per-platform base or the fast path (%s)",
			in.Rendered.Name, in.Base, strings.Join(plan.NeedsBuildah, "; "))
	}
	baseByDigest := baseRef.Context().Digest(baseDesc.Digest.String()).String()
	baseManifest, err := v1.ParseManifest(bytes.NewReader(baseDesc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("building %s with buildah: reading base %s's manifest: %w", in.Rendered.Name, in.Base, err)
	}
	ext, err := extensionsByDigest(ctx, r, *in)
	if err != nil {
		return nil, err
	}
	labels := map[string]string{LabelRenderedConfig: in.Rendered.Name, LabelBaseImage: baseByDigest, LabelPool: in.Pool}
	cfIn := ContainerfileInput{
		Base: baseByDigest, ExtensionsImage: ext, Extensions: in.Rendered.Spec.Extensions,
		KernelType: in.Rendered.Spec.KernelType, EnableUnits: plan.EnableBaseUnits, Labels: labels, User: in.Containerfile,
	}
	bc, err := GenerateContainerfile(cfIn)
	if err != nil {
		return nil, fmt.Errorf("building %s with buildah: %w", in.Rendered.Name, err)
	}
	inputs, err := in.inputs(baseByDigest, plan, trust.NodeImage{
		Builder: "buildah", BuildContext: contextHash(bc), ExtensionsImage: ext,
		Containerfile: bc.Containerfile, UserContainerfile: in.Containerfile,
	})
	if err != nil {
		return nil, err
	}
	fp := inputs.Fingerprint()
	// The fingerprint label is added after hashing the Containerfile.
	labels[LabelFingerprint] = fp
	if bc, err = GenerateContainerfile(cfIn); err != nil {
		return nil, err
	}
	res := &BuildResult{Fingerprint: fp, Tag: TagPrefix + fp, BaseRef: baseByDigest, Plan: plan, Inputs: inputs}
	return &buildahBuild{in: *in, res: res, repo: repo, bc: bc, ext: ext, baseCount: len(baseManifest.Layers)}, nil
}

// bud writes the build context into dir and returns the bud of it.
func (p *buildahBuild) bud(dir, target string) (buildah.Bud, error) {
	tarBytes, err := p.res.Plan.Tar()
	if err != nil {
		return buildah.Bud{}, err
	}
	files := map[string][]byte{"Containerfile": []byte(p.bc.Containerfile), ctxConfigTar: tarBytes}
	for k, v := range p.bc.Files {
		files[k] = []byte(v)
	}
	for k, v := range files {
		f := filepath.Join(dir, k)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return buildah.Bud{}, err
		}
		if err := os.WriteFile(f, v, 0o644); err != nil {
			return buildah.Bud{}, err
		}
	}
	return buildah.Bud{
		Dir: dir, Containerfile: filepath.Join(dir, "Containerfile"), Target: target,
		Annotations: map[string]string{AnnotationSource: p.in.Source, LabelFingerprint: p.res.Fingerprint},
		Pulls:       []string{p.in.Base, p.ext},
		Bases:       []string{p.res.BaseRef},
	}, nil
}

// extensionsByDigest resolves the extensions image to a digest when the
// Containerfile mounts it, once, before the build: the build mounts that
// digest and the attestation records it, so a tag moved meanwhile cannot
// slip other packages in. "" when the build does not use it.
func extensionsByDigest(ctx context.Context, r registry.Remote, in BuildahInput) (string, error) {
	pkgs, err := packagesFor(in.Rendered.Spec.Extensions)
	if err != nil || in.ExtensionsImage == "" || !usesExtensionsImage(pkgs, in.Rendered.Spec.KernelType) {
		return in.ExtensionsImage, nil // GenerateContainerfile reports what is wrong
	}
	ref, err := r.ParseRef(in.ExtensionsImage)
	if err != nil {
		return "", fmt.Errorf("building %s with buildah: extensions image: %w", in.Rendered.Name, err)
	}
	if d, ok := ref.(name.Digest); ok {
		return d.String(), nil
	}
	desc, err := r.Head(ctx, ref)
	if err != nil {
		return "", registry.Classify(err, "resolving the extensions image", in.ExtensionsImage)
	}
	return ref.Context().Digest(desc.Digest.String()).String(), nil
}

// contextHash is the sha256 of the generated Containerfile and its files,
// before the fingerprint label is added to it.
func contextHash(bc *BuildContext) string {
	h := sha256.New()
	fmt.Fprintf(h, "buildah\n%s", bc.Containerfile)
	keys := make([]string, 0, len(bc.Files))
	for k := range bc.Files {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "\n%s\n%s", k, bc.Files[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
