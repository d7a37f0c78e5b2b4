package osimage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// DefaultBuildah is the buildah binary every step runs unless told
// otherwise: buildah on PATH.
const DefaultBuildah = "buildah"

// Buildah runs the buildah CLI (the proxy refuses buildah's Go module).
type Buildah struct {
	// Bin is the buildah binary; empty means "buildah" on PATH.
	Bin string
	// Env is buildah's environment; nil means the process's.
	Env []string
	// Root, when set, is buildah's storage: every call gets the global
	// --root <Root>/storage --runroot <Root>/run, so a rebuild starts from
	// empty storage whatever Env's storage.conf names.
	Root string
}

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
func BuildWithBuildah(ctx context.Context, bb Buildah, r registry.Remote, in BuildahInput) (*BuildResult, error) {
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
		res.Lint, err = lintImages(map[string]v1.Image{"": img}, res.Plan)
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
	return &buildahBuild{in: *in, res: res, repo: repo, bc: bc, ext: ext}, nil
}

// bud writes the build context into dir and returns the bud of it.
func (p *buildahBuild) bud(dir, target string) (Bud, error) {
	tarBytes, err := p.res.Plan.Tar()
	if err != nil {
		return Bud{}, err
	}
	files := map[string][]byte{"Containerfile": []byte(p.bc.Containerfile), ctxConfigTar: tarBytes}
	for k, v := range p.bc.Files {
		files[k] = []byte(v)
	}
	for k, v := range files {
		f := filepath.Join(dir, k)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			return Bud{}, err
		}
		if err := os.WriteFile(f, v, 0o644); err != nil {
			return Bud{}, err
		}
	}
	return Bud{
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

// Bud is a generic `buildah bud` of a caller's Containerfile, for builds
// kiln does not generate (kmod multi-stage Dockerfiles).
type Bud struct {
	// Dir is the build context; Containerfile is a path to the file.
	Dir, Containerfile string
	BuildArgs          map[string]string
	// Secrets are buildah `--secret id=ID,src=FILE`: mounted for RUN steps
	// that ask (RUN --mount=type=secret,id=ID), never stored in a layer.
	Secrets map[string]string
	Labels  map[string]string
	// Annotations go on the image manifest.
	Annotations map[string]string
	// Pulls are the image references the build pulls (its FROMs), so that
	// their registries get the registry flags.
	Pulls []string
	// Bases are the images by digest (repository@sha256:…) whose layers
	// the result starts with: those keep the base's compressed blobs.
	Bases []string
	// Env are `--env K=V` for every stage: unlike an undeclared
	// --build-arg, they reach every RUN step (and land in the image
	// config's Env).
	Env map[string]string
	// Target is where the result is pushed.
	Target string
	// Check, when set, runs on the built image before anything is pushed;
	// its error stops the push (image-build's node import check).
	Check func(v1.Image) error
	// OnStep, when set, gets each of buildah's "STEP n/m: …" lines as the
	// build reaches it (BudSteps), so a long build shows where it is.
	OnStep func(line string)
}

// BudAndPush builds with `buildah bud --layers --timestamp 0`, writes the
// result to an OCI layout and pushes it with kiln's own registry client
// (see BudLocal for why not `buildah push`), returning the pushed digest.
// A failed build reports the tail of buildah's log; nothing is pushed
// then. The manifest PUT to b.Target (a tag) comes last, so a failed push
// leaves no tag.
func (bb Buildah) BudAndPush(ctx context.Context, r registry.Remote, b Bud) (v1.Hash, error) {
	target, err := r.ParseRef(b.Target)
	if err != nil {
		return v1.Hash{}, err
	}
	tmp, err := os.MkdirTemp("", "kiln-bud-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	out, err := bb.BudLocal(ctx, r, b, tmp)
	if err != nil {
		return v1.Hash{}, err
	}
	if b.Check != nil {
		if err := b.Check(out.Image); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := r.Write(ctx, target, out.Image); err != nil {
		return v1.Hash{}, registry.Classify(err, "pushing image", target.String())
	}
	return out.Digest, nil
}

// bud runs `buildah bud` for b into local storage and returns the local
// name of the result; the caller removes it. tmp is a folder the caller
// removes.
func (bb Buildah) bud(ctx context.Context, r registry.Remote, b Bud, tmp string) (string, error) {
	sum := sha256.Sum256([]byte(b.Target))
	local := "localhost/kiln-bud:" + hex.EncodeToString(sum[:8])
	// --identity-label=false: buildah's io.buildah.version label would make
	// the bytes depend on which buildah built them, so two machines with
	// different buildah releases would never agree on a digest.
	args := []string{"bud", "--layers", "--timestamp", "0", "--identity-label=false", "--format", "oci", "-f", b.Containerfile, "-t", local}
	for _, k := range sortedKeys(b.BuildArgs) {
		args = append(args, "--build-arg", k+"="+b.BuildArgs[k])
	}
	for _, k := range sortedKeys(b.Env) {
		args = append(args, "--env", k+"="+b.Env[k])
	}
	for _, k := range sortedKeys(b.Secrets) {
		args = append(args, "--secret", "id="+k+",src="+b.Secrets[k])
	}
	for _, k := range sortedKeys(b.Labels) {
		args = append(args, "--label", k+"="+b.Labels[k])
	}
	for _, k := range sortedKeys(b.Annotations) {
		args = append(args, "--annotation", k+"="+b.Annotations[k])
	}
	pull, err := pullCall(r, b.Pulls, tmp)
	if err != nil {
		return "", fmt.Errorf("building %s with buildah: %w", b.Target, err)
	}
	var steps io.Writer
	if b.OnStep != nil {
		steps = &BudSteps{Fn: b.OnStep}
	}
	if out, err := bb.runEnvTo(ctx, pull.env, steps, append(append(args, pull.args...), b.Dir)...); err != nil {
		return "", fmt.Errorf("building %s with buildah: %w\n%s", b.Target, err, tail(out, 15))
	}
	return local, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
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

func (bb Buildah) run(ctx context.Context, args ...string) (string, error) {
	return bb.runEnv(ctx, nil, args...)
}

// runEnv runs buildah with extra variables added to its environment.
func (bb Buildah) runEnv(ctx context.Context, extra []string, args ...string) (string, error) {
	return bb.runEnvTo(ctx, extra, nil, args...)
}

// runEnvTo is runEnv that also streams buildah's output to live as it
// comes, when live is set.
func (bb Buildah) runEnvTo(ctx context.Context, extra []string, live io.Writer, args ...string) (string, error) {
	bin := bb.Bin
	if bin == "" {
		bin = "buildah"
	}
	if bb.Root != "" {
		args = append([]string{"--root", filepath.Join(bb.Root, "storage"), "--runroot", filepath.Join(bb.Root, "run")}, args...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = bb.Env
	if len(extra) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(slices.Clip(cmd.Env), extra...)
	}
	var out bytes.Buffer
	var w io.Writer = &out
	if live != nil {
		// One writer for both streams: exec then calls it from one
		// goroutine at a time.
		w = io.MultiWriter(&out, live)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.String(), err
}

// tail returns the last n lines of s: buildah's error is at the end.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
