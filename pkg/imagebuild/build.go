package imagebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/nodecache"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Labels and annotations kiln puts on every image.
const (
	LabelFingerprint    = "kiln.dev/fingerprint"
	LabelRenderedConfig = "kiln.dev/rendered-config"
	LabelBaseImage      = "kiln.dev/base-image"
	LabelPool           = "kiln.dev/pool"
	AnnotationSource    = "org.opencontainers.image.source"
	annotationBaseName  = "org.opencontainers.image.base.name"
	annotationBaseDig   = "org.opencontainers.image.base.digest"
	// TagPrefix starts the content-addressed tag: kiln-<fingerprint>.
	TagPrefix = "kiln-"
)

// DefaultSource is the org.opencontainers.image.source of kiln's images.
const DefaultSource = "https://github.com/kiln-dev/kiln"

// ErrNeedsBuildah says the rendered config needs a container build.
var ErrNeedsBuildah = errors.New("the rendered config needs the buildah path")

// BuildInput is everything that determines the image.
type BuildInput struct {
	// Base is the image to layer on: the payload's OS image or a kmod image.
	Base string
	// Repository receives the result, e.g. quay.io/org/os.
	Repository string
	Pool       string
	Rendered   *mcfgv1.MachineConfig
	// KmodDigests are the digests of the kmod images baked into Base.
	KmodDigests []string
	// Source is the OCI source annotation; empty means DefaultSource.
	Source string
	// Identity is kiln's signing identity: an image at the fingerprint tag
	// is reused only when it proves, by a signature and an attestation
	// from this identity, that it was built from these inputs. The zero
	// Identity proves nothing, so every run builds and pushes.
	Identity trust.Identity
	// NodeCache keeps the node import check's state of base images
	// between builds (nil: none), so a build on a base it has seen reads
	// only the layers above the base. It never changes a result.
	NodeCache *nodecache.Cache
}

// BuildResult says what was built or reused.
type BuildResult struct {
	// Ref is repository@sha256:…, what osImageURL gets.
	Ref    string
	Digest v1.Hash
	Reused bool
	// Rejected says why the image at the fingerprint tag was not reused
	// ("" when the tag was absent or the image was reused).
	Rejected    string
	Fingerprint string
	Tag         string
	BaseRef     string // base by digest
	Platforms   []string
	Plan        *Plan
	// Inputs are what the image is built from (pkg/trust).
	Inputs trust.Inputs
	// Lint is the node import check of the image, run before the push;
	// for a reused image, the attested rules it passed.
	Lint *NodeLint
}

// inputs are the build's trust.Inputs: what image-sign attests and what a
// reuse must be proven against. by holds the builder's own fields
// (Builder, and the buildah path's context); the rest comes from in.
func (in *BuildInput) inputs(baseByDigest string, plan *Plan, by trust.NodeImage) (trust.Inputs, error) {
	by.Pool, by.BaseImage, by.RenderedName, by.RenderedHash = in.Pool, baseByDigest, in.Rendered.Name, RenderedHash(plan)
	by.KmodDigests, by.Source, by.NodeLint = in.KmodDigests, in.Source, nodeimport.RulesVersion
	return by.Inputs()
}

// RenderedHash is the sha256 of the normalised rendered config.
func RenderedHash(p *Plan) string {
	s := sha256.Sum256(p.CurrentConfig)
	return "sha256:" + hex.EncodeToString(s[:])
}

// Build runs the fast path: plan the layer, reuse the image at the
// fingerprint's tag when kiln's identity proves it (see reuse), else append
// the layer to every platform of the base and push it (base layers
// mounted), its manifest put at the tag once every blob is in the registry.
func Build(ctx context.Context, r registry.Remote, in BuildInput) (*BuildResult, error) {
	// One session for the whole build: each registry is pinged once.
	r = r.WithSession()
	f, err := in.prepareFast(ctx, r)
	if err != nil {
		return nil, err
	}
	res, repo := f.res, f.repo
	tag := repo.Tag(res.Tag)
	defer f.prefetchConfig()()
	if done, err := res.reuse(ctx, r, tag, in.Identity); err != nil || done {
		return res, err
	}
	a, err := f.assemble()
	if err != nil {
		return nil, err
	}
	images, err := a.images()
	if err != nil {
		return nil, err
	}
	if res.Lint, err = lintImages(images, res.Plan, in.NodeCache, aboveBase); err != nil {
		return nil, fmt.Errorf("building image for %s: %w", in.Rendered.Name, err)
	}
	res.Digest = a.digest
	// The manifest goes straight to the tag, once: the registry refuses a
	// manifest whose blobs it does not hold, so the tag never names an
	// incomplete build and a failed push leaves the next run to rebuild.
	if a.index != nil {
		if err := r.PushIndex(ctx, tag, a.index); err != nil {
			return nil, registry.Classify(err, "pushing image index", tag.String())
		}
	} else if err := r.PushImage(ctx, tag, a.image); err != nil {
		return nil, registry.Classify(err, "pushing image", tag.String())
	}
	res.Ref = repo.Digest(res.Digest.String()).String()
	return res, nil
}

// fastBuild is a planned fast-path build: everything but its bytes.
type fastBuild struct {
	in       BuildInput
	res      *BuildResult
	baseRef  name.Reference
	baseDesc *registry.Descriptor
	repo     name.Repository
	// base is the base image, read once (nil for an index), so that its
	// config is fetched once; baseErr is why it could not be, which only
	// a build reports (a reuse needs no base image).
	base    v1.Image
	baseErr error
}

// prefetchConfig reads the base image's config in the background, while
// the reuse decision waits on its own request: a build needs the config
// next, and the image keeps it (go-containerregistry's remote image reads
// it once, under a lock). An error is left for assemble, which asks again
// and reports it. The returned func waits for the read to end.
func (f *fastBuild) prefetchConfig() (wait func()) {
	if f.base == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.base.RawConfigFile()
	}()
	return func() { <-done }
}

// prepareFast plans the layer, resolves the base and computes the inputs;
// it reads the base's descriptor only.
func (in *BuildInput) prepareFast(ctx context.Context, r registry.Remote) (*fastBuild, error) {
	plan, err := in.plan()
	if err != nil {
		return nil, err
	}
	if len(plan.NeedsBuildah) > 0 {
		return nil, fmt.Errorf("building image for %s: %w: %s", in.Rendered.Name, ErrNeedsBuildah, strings.Join(plan.NeedsBuildah, "; "))
	}
	baseRef, baseDesc, repo, err := resolve(ctx, r, *in)
	if err != nil {
		return nil, err
	}
	baseByDigest := baseRef.Context().Digest(baseDesc.Digest.String()).String()
	inputs, err := in.inputs(baseByDigest, plan, trust.NodeImage{Builder: "fast"})
	if err != nil {
		return nil, err
	}
	fp := inputs.Fingerprint()
	res := &BuildResult{Fingerprint: fp, Tag: TagPrefix + fp, BaseRef: baseByDigest, Plan: plan, Inputs: inputs}
	f := &fastBuild{in: *in, res: res, baseRef: baseRef, baseDesc: baseDesc, repo: repo}
	if !baseDesc.MediaType.IsIndex() {
		f.base, f.baseErr = baseDesc.Image()
	}
	return f, nil
}

// assembled is the fast path's image (or index) before any push, with the
// digest the push gives it: Build pushes it, Rebuild only returns it.
type assembled struct {
	digest v1.Hash
	image  v1.Image
	index  v1.ImageIndex
}

// assemble appends the config layer to every platform of the base and
// sets f.res.Platforms.
func (f *fastBuild) assemble() (*assembled, error) {
	in, res, plan := f.in, f.res, f.res.Plan
	tarBytes, err := plan.Tar()
	if err != nil {
		return nil, err
	}
	meta := imageMeta{
		labels: map[string]string{
			LabelFingerprint: res.Fingerprint, LabelRenderedConfig: in.Rendered.Name,
			LabelBaseImage: res.BaseRef, LabelPool: in.Pool,
		},
		annotations: map[string]string{
			AnnotationSource: in.Source, LabelFingerprint: res.Fingerprint,
			annotationBaseName: f.baseRef.Context().String(), annotationBaseDig: f.baseDesc.Digest.String(),
		},
		history: fmt.Sprintf("kiln: %s for pool %s (%d entries, fingerprint %s)", in.Rendered.Name, in.Pool, len(plan.Entries), res.Fingerprint[:12]),
		layer:   tarBytes,
	}
	a := &assembled{}
	if f.baseDesc.MediaType.IsIndex() {
		idx, platforms, err := meta.index(f.baseDesc)
		if err != nil {
			return nil, fmt.Errorf("building image from base index %s: %w", in.Base, err)
		}
		res.Platforms = platforms
		a.index = idx
		a.digest, err = idx.Digest()
		return a, err
	}
	if f.baseErr != nil {
		return nil, registry.Classify(f.baseErr, "reading base image", in.Base)
	}
	if a.image, err = meta.image(f.base); err != nil {
		return nil, fmt.Errorf("building image on %s: %w", in.Base, err)
	}
	a.digest, err = a.image.Digest()
	return a, err
}

// plan checks the input and plans the config layer; both builders start
// here.
func (in *BuildInput) plan() (*Plan, error) {
	if in.Pool == "" || in.Repository == "" || in.Base == "" {
		return nil, fmt.Errorf("building image: base, repository and pool are required")
	}
	if in.Source == "" {
		in.Source = DefaultSource
	}
	return PlanLayer(in.Rendered)
}

// resolve reads the base's descriptor (never its layers) and parses the
// target repository. The base is read through the mirrors; it keeps its
// own name (baseRef) in labels and inputs, as CRI-O resolves it the same
// way on the nodes.
func resolve(ctx context.Context, r registry.Remote, in BuildInput) (name.Reference, *registry.Descriptor, name.Repository, error) {
	baseRef, err := r.ParseRef(in.Base)
	if err != nil {
		return nil, nil, name.Repository{}, err
	}
	repo, err := r.ParseRepo(in.Repository)
	if err != nil {
		return nil, nil, name.Repository{}, err
	}
	baseDesc, err := r.Get(ctx, baseRef)
	if err != nil {
		return nil, nil, name.Repository{}, registry.Classify(err, "reading base image", in.Base)
	}
	return baseRef, baseDesc, repo, nil
}

// reuse looks at the fingerprint tag and reuses what it holds only when
// sign.Prove passes for that digest: a signature and an attestation
// from id binding exactly res.Inputs. The tag itself, its labels and its
// annotations are claims anyone with push access can copy, so they decide
// nothing; a rejected image is rebuilt and the tag moved to kiln's build.
// It only reads the registry, the one kiln pushes to (never a mirror). An
// unreachable registry or refused credentials are errors, never a reason
// to rebuild.
func (res *BuildResult) reuse(ctx context.Context, r registry.Remote, tag name.Tag, id trust.Identity) (bool, error) {
	desc, err := r.HeadNamed(ctx, tag)
	if err != nil {
		cerr := registry.Classify(err, "looking for an existing build", tag.String())
		if errors.Is(cerr, registry.ErrNotFound) {
			return false, nil
		}
		return false, cerr
	}
	image := tag.Context().Digest(desc.Digest.String())
	switch err := proof.Prove(ctx, r, image, id, res.Inputs); {
	case err == nil:
		// A reused image is not signed again (the Pipeline skips
		// image-sign), so it must be one the node can read as it is: a
		// signature layer over the limit makes containers/image refuse it
		// until image-sign writes the artifact anew. Rebuild (the same
		// digest) so that image-sign runs.
		n, err := proof.Oversized(ctx, r, image)
		if err != nil {
			return false, fmt.Errorf("proving the existing build %s: %w", tag, registry.Classify(err, "reading signatures of", image.String()))
		}
		if n > 0 {
			res.Rejected = fmt.Sprintf("tag %s holds %s, proven, but its signature artifact has %d layers over the %d-byte limit nodes read; rebuilt so that image-sign writes the signatures anew",
				tag.TagStr(), desc.Digest, n, proof.MaxAttachmentSize)
			return false, nil
		}
		res.Digest, res.Reused, res.Ref = desc.Digest, true, image.String()
		// The proven inputs name the node rules; kiln signs only an image
		// that passed them.
		res.Lint = &NodeLint{Summary: nodeimport.Summary{Rules: res.Inputs.Parameters["nodeLint"], Pass: true}, Attested: true}
		return true, nil
	case errors.Is(err, trust.ErrNotProven):
		res.Rejected = fmt.Sprintf("tag %s holds %s with %s: %s", tag.TagStr(), desc.Digest, trust.ErrNotProven, trust.Reason(err))
		return false, nil
	default:
		return false, fmt.Errorf("proving the existing build %s: %w", tag, err)
	}
}

// images are the assembled image's platform images, by platform.
func (a *assembled) images() (map[string]v1.Image, error) {
	if a.index == nil {
		return map[string]v1.Image{"": a.image}, nil
	}
	im, err := a.index.IndexManifest()
	if err != nil {
		return nil, err
	}
	out := map[string]v1.Image{}
	for _, d := range im.Manifests {
		img, err := a.index.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading platform %v of the built index: %w", d.Platform, err)
		}
		name := d.Digest.String()
		if d.Platform != nil {
			name = "platform " + d.Platform.String()
		}
		out[name] = img
	}
	return out, nil
}

// imageMeta is what the fast path adds to each platform's image.
type imageMeta struct {
	labels, annotations map[string]string
	history             string
	layer               []byte
}

// image appends the layer to base and sets labels, history and annotations.
// Every timestamp is the base's, so the result depends only on the inputs.
func (m imageMeta) image(base v1.Image) (v1.Image, error) {
	layerType, err := LayerTypeFor(base)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(m.layer)), nil
	}, tarball.WithMediaType(layerType))
	if err != nil {
		return nil, fmt.Errorf("compressing layer: %w", err)
	}
	cf, err := base.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading base config: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: cf.Created, CreatedBy: m.history, Comment: "kiln fast path"},
	})
	if err != nil {
		return nil, fmt.Errorf("appending layer: %w", err)
	}
	cf, err = img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg := cf.Config
	cfg.Labels = maps.Clone(cfg.Labels)
	if cfg.Labels == nil {
		cfg.Labels = map[string]string{}
	}
	maps.Copy(cfg.Labels, m.labels)
	if img, err = mutate.Config(img, cfg); err != nil {
		return nil, fmt.Errorf("setting labels: %w", err)
	}
	return mutate.Annotations(img, m.annotations).(v1.Image), nil
}

// index builds every platform of a base index and returns the new index.
func (m imageMeta) index(desc *registry.Descriptor) (v1.ImageIndex, []string, error) {
	base, err := desc.ImageIndex()
	if err != nil {
		return nil, nil, err
	}
	im, err := base.IndexManifest()
	if err != nil {
		return nil, nil, err
	}
	out := mutate.IndexMediaType(empty.Index, im.MediaType)
	var platforms []string
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() || (d.Platform != nil && d.Platform.OS == "unknown") {
			continue // attestation manifests and the like carry no OS
		}
		child, err := base.Image(d.Digest)
		if err != nil {
			return nil, nil, fmt.Errorf("reading platform %v: %w", d.Platform, err)
		}
		built, err := m.image(child)
		if err != nil {
			return nil, nil, fmt.Errorf("platform %v: %w", d.Platform, err)
		}
		out = mutate.AppendManifests(out, mutate.IndexAddendum{Add: built, Descriptor: v1.Descriptor{Platform: d.Platform}})
		if d.Platform != nil {
			platforms = append(platforms, d.Platform.String())
		}
	}
	if len(platforms) == 0 {
		return nil, nil, fmt.Errorf("base index has no platform images")
	}
	return mutate.Annotations(out, m.annotations).(v1.ImageIndex), platforms, nil
}

// LayerTypeFor is the media type of a layer appended to base: the one its
// manifest's family uses. containers/image (buildah, CRI-O) refuses a
// Docker layer in an OCI manifest when it pulls the result.
func LayerTypeFor(base v1.Image) (types.MediaType, error) {
	mt, err := base.MediaType()
	if err != nil {
		return "", fmt.Errorf("reading base manifest: %w", err)
	}
	if mt == types.OCIManifestSchema1 {
		return types.OCILayer, nil
	}
	return types.DockerLayer, nil
}
