package osimage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/nodecache"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// BuildOptions are the flags of `kiln-steps image-build`.
type BuildOptions struct {
	step.Options
	registry.RegistryOptions
	// IdentityOptions name kiln's signing identity, whose attestation
	// alone makes an image at the fingerprint tag reusable.
	step.IdentityOptions
	// Base is the image to layer on (kmod image if any, else BASE_IMAGE).
	Base string
	// Repository receives the image.
	Repository string
	// PayloadBase, when set and different from Base, makes Base a custom
	// base that must pass Preflight against it.
	PayloadBase string
	KmodDigests []string
	Source      string
	// ExtensionsImage is the payload's extensions image (buildah path).
	ExtensionsImage string
	// ContainerfilePath holds user Containerfile content; it selects the
	// buildah path.
	ContainerfilePath string
	// BuildahBin is the buildah binary of the buildah path.
	BuildahBin string
	// CacheDir holds the node import cache (pkg/nodecache); empty means
	// none. Only this step writes it: buildah is never given it.
	CacheDir string
}

// DefaultBuildOptions returns image-build's options with their defaults.
func DefaultBuildOptions() *BuildOptions {
	return &BuildOptions{
		Options: step.DefaultOptions(), IdentityOptions: step.DefaultIdentityOptions(),
		Source: imagebuild.DefaultSource, BuildahBin: buildah.DefaultBuildah,
	}
}

// Validate reports every bad flag at once.
func (o *BuildOptions) Validate() error {
	return exitcode.ValidationErrors(o.Options.Validate(), exitcode.Required("base", o.Base), exitcode.Required("repository", o.Repository),
		imageref.ValidRef("base", o.Base), imageref.ValidRepository("repository", o.Repository),
		imageref.ValidRef("payload-base", o.PayloadBase), imageref.ValidRef("extensions-image", o.ExtensionsImage),
		o.IdentityOptions.Validate(), validKmodDigests(o.KmodDigests))
}

// Run builds (or reuses) the image and writes results and a report.
func (o *BuildOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	ws := o.Workspace()
	mc, err := imagebuild.ReadRendered(ws.RenderedPath())
	if err != nil {
		return err
	}
	dir, err := ws.Ensure(work.StageImageBuild)
	if err != nil {
		return err
	}
	p := step.NewProgress(s.Out, work.StageImageBuild)
	id, err := o.Files().Load()
	if err != nil {
		return fmt.Errorf("building image for pool %s: %w", o.Pool, err)
	}
	if id.IsZero() {
		p.Printf("no signing identity configured (no %s, no keyless flags): nothing can be proven, so nothing is reused", o.PublicKey)
	}
	if err := o.kmodBase(ws, p); err != nil {
		return err
	}
	if o.PayloadBase != "" && o.PayloadBase != o.Base {
		p.Printf("preflight: %s against payload base %s", o.Base, o.PayloadBase)
		if err := Preflight(ctx, r, o.PayloadBase, o.Base); err != nil {
			return err
		}
	}
	p.Printf("building %s for pool %s on %s", mc.Name, o.Pool, o.Base)
	in := imagebuild.BuildInput{
		Base: o.Base, Repository: o.Repository, Pool: o.Pool, Rendered: mc,
		KmodDigests: o.KmodDigests, Source: o.Source, Identity: id,
	}
	if o.CacheDir != "" {
		in.NodeCache = &nodecache.Cache{Dir: o.CacheDir, Warnings: s.Err}
	}
	res, err := o.build(ctx, r, in, p)
	if err != nil {
		return err
	}
	if res.Rejected != "" {
		p.Printf("%s", res.Rejected)
	}
	if res.Lint != nil {
		for _, f := range res.Lint.Findings {
			p.Printf("node check: %s", f)
		}
		p.Printf("node check (%s): pass, %d warning(s)", res.Lint.Rules, len(res.Lint.Warnings))
	}
	if res.Reused {
		p.Printf("reused %s (tag %s, proven by %s): no build, no push", res.Ref, res.Tag, id)
	} else {
		p.Printf("pushed %s (%d layer entries, tag %s)", res.Ref, len(res.Plan.Entries), res.Tag)
	}
	if err := writeReport(filepath.Join(dir, work.BuildReportFile), in, res); err != nil {
		return err
	}
	return writeBuildResults(o.Results(), res)
}

// writeBuildResults writes the results in the shape of Tekton Chains' type
// hints, so that Chains signs and attests the image with no setup:
// IMAGE_URL is the repository and IMAGE_DIGEST the digest (Chains joins them
// with "@"; a URL that is already a digest reference would make it skip the
// image), and BASE_IMAGE_ARTIFACT_INPUTS, {uri, digest}, puts the base the
// image was layered on into the provenance's materials, named
// oci://<repository> as Chains names its step images there.
func writeBuildResults(results *taskresult.Results, res *imagebuild.BuildResult) error {
	image, err := name.NewDigest(res.Ref)
	if err != nil {
		return fmt.Errorf("writing results: image %q: %w", res.Ref, err)
	}
	base, err := name.NewDigest(res.BaseRef)
	if err != nil {
		return fmt.Errorf("writing results: base %q: %w", res.BaseRef, err)
	}
	for k, v := range map[string]string{
		"IMAGE_URL": image.Context().Name(), "IMAGE_DIGEST": res.Digest.String(), "REUSED": strconv.FormatBool(res.Reused),
		"REUSE_REJECTED": clip(res.Rejected, maxRejectedBytes), "NODE_CHECK": clip(verdict(res.Lint, nodeView(res.Plan)), maxNodeCheckBytes),
	} {
		if err := results.Set(k, v); err != nil {
			return err
		}
	}
	err = results.SetObject("BASE_IMAGE_ARTIFACT_INPUTS", map[string]string{"uri": "oci://" + base.Context().Name(), "digest": base.DigestStr()})
	if err != nil {
		return err
	}
	return results.Write()
}

// kmodBase makes this run's kmod image, when the kmod stages left one in
// the workspace, the base of the layered image, with the given
// --base (the payload's) as the preflight reference.
func (o *BuildOptions) kmodBase(ws work.Workspace, p *step.Progress) error {
	k, ok, err := checkKmodDigests(ws, o.KmodDigests)
	if err != nil {
		return fmt.Errorf("building image for pool %s: %w", o.Pool, err)
	}
	if !ok {
		return nil
	}
	if o.PayloadBase == "" {
		o.PayloadBase = o.Base
	}
	p.Printf("base: kmod image %s (payload base %s)", k.Image, o.PayloadBase)
	o.Base = k.Image
	o.KmodDigests = withKmodDigest(o.KmodDigests, k.Digest)
	return nil
}

// build takes the fast path unless user content or the config needs a
// container build.
func (o *BuildOptions) build(ctx context.Context, r registry.Remote, in imagebuild.BuildInput, p *step.Progress) (*imagebuild.BuildResult, error) {
	var user []byte
	if o.ContainerfilePath != "" {
		var err error
		if user, err = os.ReadFile(o.ContainerfilePath); err != nil {
			return nil, fmt.Errorf("reading user Containerfile: %w", err)
		}
	}
	if len(user) == 0 {
		res, err := imagebuild.Build(ctx, r, in)
		if !errors.Is(err, imagebuild.ErrNeedsBuildah) {
			return res, err
		}
		p.Printf("%v", err)
	}
	p.Printf("buildah path: buildah bud --layers --timestamp 0")
	return imagebuild.BuildWithBuildah(ctx, buildah.Buildah{Bin: o.BuildahBin}, r, imagebuild.BuildahInput{
		// The rendered config names the payload's extensions image, as MCO's
		// rendered configs do; --extensions-image overrides it.
		BuildInput: in, ExtensionsImage: cmp.Or(o.ExtensionsImage, in.Rendered.Spec.BaseOSExtensionsContainerImage), Containerfile: string(user),
	})
}

func writeReport(path string, in imagebuild.BuildInput, res *imagebuild.BuildResult) error {
	rep := work.BuildReport{Record: trust.Record{Ref: res.Ref, Inputs: res.Inputs, NodeLint: res.Lint.Record()}, Digest: res.Digest.String(), Reused: res.Reused, ReuseRejected: res.Rejected, Fingerprint: res.Fingerprint,
		Tag: res.Tag, Base: res.BaseRef, RenderedName: in.Rendered.Name, RenderedHash: imagebuild.RenderedHash(res.Plan),
		KmodDigests: in.KmodDigests, Pool: in.Pool, Platforms: res.Platforms}
	if res.Lint != nil {
		rep.NodeLintFindings = res.Lint.Findings
		view := nodeView(res.Plan)
		rep.NodeView = &view
	}
	for _, e := range res.Plan.Entries {
		rep.Entries = append(rep.Entries, fmt.Sprintf("%c %04o %d:%d %s (%s)", e.Type, e.Mode, e.UID, e.GID, e.Path, e.Origin))
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing build report: %w", err)
	}
	return nil
}

// maxRejectedBytes bounds REUSE_REJECTED within Tekton's result budget; the
// step's log has the whole message.
const maxRejectedBytes = 1024

// maxNodeCheckBytes bounds NODE_CHECK likewise; build.json's nodeView and
// nodeLintFindings have every path.
const maxNodeCheckBytes = 512

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n-len("…")], "") + "…"
}
