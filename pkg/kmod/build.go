package kmod

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// DockerfileKey is the ConfigMap key holding the Dockerfile (the day-0 proposal).
const DockerfileKey = "dockerfile"

// BuildOptions are the flags of `kiln-steps kmod-build`.
//
// Differences from KMM (which only has the day-0 proposal):
//   - DTK_AUTO is the driver-toolkit tag of the release image the
//     ClusterVersion names (pkg/payload.ReleaseImages), or --dtk-image; KMM
//     reads the cluster's driver-toolkit ImageStream, which the same
//     payload fills.
//   - build secrets are buildah secrets with id "<secret>_<key>" (RUN
//     --mount=type=secret,id=...), read from one mounted folder per Secret;
//     KMM's day-2 builds hand them to an OpenShift Build instead.
//   - the step only builds and pushes; writing mc.osImageURL ("once built,
//     KMM will modify the mc.osImageURL") is rollout's job, after signing
//     and verification.
//   - KERNEL_FULL_VERSION is the kernel the pool boots (the rendered
//     config's kernelType; targetKernel), not always OS_AUTO's; kmod-sign
//     then places the modules under that kernel's folder (place.go).
//
// The step runs the user's Dockerfile, so it holds no signing key: it
// proves reuse with kiln's public key only, and kmod-attest, a step of its
// own that runs no user code, signs and attests what it pushed.
type BuildOptions struct {
	step.Options
	registry.RegistryOptions
	kube.KubeOptions
	// OSImage and DTKImage are the payload's rhel-coreos and driver-toolkit
	// images (OS_AUTO, DTK_AUTO). An empty OSImage is read from the payload
	// ConfigMap machine-config-osimageurl; an empty DTKImage, when the
	// Dockerfile uses DTK_AUTO, from the release image of ClusterVersion
	// status.desired.image.
	OSImage, DTKImage string
	// Rebuild builds even when containerImage exists (the day-0 proposal's "Cluster upgrade").
	Rebuild bool
	// TargetRelease, set on upgrade-ahead runs, is the release they prepare:
	// the image goes to the target kernel's ahead tag (AheadRef), never to
	// the tag the running pool uses.
	TargetRelease string
	// SecretsDir holds one folder per build secret (a mounted Secret).
	SecretsDir string
	// Buildah runs the build; tests give it their private storage.
	Buildah buildah.Buildah
	// Identity proves reuse.
	Identity step.IdentityOptions
}

// DefaultSecretsDir is where kmod-build's Task mounts the build secrets.
const DefaultSecretsDir = "/etc/kiln/kmod-build-secrets"

// DefaultBuildOptions returns kmod-build's options with their defaults.
func DefaultBuildOptions() *BuildOptions {
	return &BuildOptions{
		Options: step.DefaultOptions(), KubeOptions: kube.DefaultKubeOptions(),
		SecretsDir: DefaultSecretsDir, Buildah: buildah.Buildah{Bin: buildah.DefaultBuildah},
		Identity: step.DefaultIdentityOptions(),
	}
}

// Validate reports every bad flag at once.
func (o *BuildOptions) Validate() error {
	return exitcode.ValidationErrors(o.Options.Validate(), o.KubeOptions.Validate(), o.Identity.Validate(),
		imageref.ValidRef("os-image", o.OSImage), imageref.ValidRef("dtk-image", o.DTKImage), validTargetRelease(o.TargetRelease))
}

// Run builds the ModuleDay0's Dockerfile and pushes the unsigned (or
// final) kmod image.
func (o *BuildOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	// The registries folder is read before anything else can fail.
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	ws := o.Workspace()
	md, err := ReadModuleDay0(ws)
	if err != nil {
		return err
	}
	build := md.Spec.OSMapping.Build
	if build == nil {
		return fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.build is not set; kmod-build has nothing to do", md.Namespace, md.Name)
	}
	c, err := newClient(&o.KubeOptions, ws)
	if err != nil {
		return err
	}
	objs, err := objects(ctx, c, md)
	if err != nil {
		return err
	}
	dockerfile, err := objs.dockerfile(md)
	if err != nil {
		return err
	}
	// Secrets are checked before any registry call: fail before work.
	secrets, err := o.secretFiles(md)
	if err != nil {
		return err
	}
	id, err := o.Identity.Files().Load()
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	pl := Payload{OSImage: o.OSImage, DTKImage: o.DTKImage}
	if pl.OSImage == "" {
		if pl.OSImage, err = objs.osAuto(md); err != nil {
			return err
		}
	}
	p := step.NewProgress(s.Out, work.StageKmodBuild)
	plan, err := Decide(md, Facts{Rebuild: o.Rebuild})
	if err != nil {
		return err
	}
	if pl.DTKImage == "" && needsDTK(dockerfile) {
		if pl.DTKImage, err = driverToolkit(ctx, r, c, md); err != nil {
			return err
		}
		p.Printf("DTK_AUTO is the release's driver-toolkit %s", pl.DTKImage)
	}
	bi, err := o.inputs(ctx, r, md, plan.BuildTarget, dockerfile, pl)
	if err != nil {
		return err
	}
	pushTo, err := pushPlace(o.TargetRelease, plan.BuildTarget, bi.kernel, bi.inputs)
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	reuse, err := o.reuse(ctx, r, md, plan, pushTo, bi, id, p)
	if err != nil {
		return err
	}
	if reuse.Proven {
		rep := work.KmodReport{Image: reuse.Image, Digest: reuse.Digest, Kernel: bi.kernel, Inputs: &bi.inputs, Reused: true}
		return writeKmodResults(o.Options, ws, work.KmodBuildFile, rep)
	}
	if !o.Rebuild {
		p.Printf("ModuleDay0 %s/%s: %s", md.Namespace, md.Name, plan.Reason)
	}
	dir, err := os.MkdirTemp("", "kiln-kmod-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := kmodbuild.UnsignedBud(dir, dockerfile, bi.args, secrets, pushTo, bi.kernel)
	if err != nil {
		return err
	}
	p.Printf("building %s for kernel %s, %s (OS_AUTO %s, DTK_AUTO %s)", pushTo, bi.kernel, bi.why, bi.args[kmodbuild.ArgOSAuto], bi.args[kmodbuild.ArgDTKAuto])
	// A kernel module build compiles for minutes: one line per Dockerfile
	// instruction shows where it is (Printf escapes the Dockerfile's text).
	b.OnStep = func(line string) { p.Printf("%s", clipStep(line)) }
	d, err := o.Buildah.BudAndPush(ctx, r, b)
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: Dockerfile of ConfigMap %q: %w", md.Namespace, md.Name, build.DockerfileConfigMap.Name, err)
	}
	ref, err := r.ParseRef(pushTo)
	if err != nil {
		return err
	}
	rep := work.KmodReport{Image: ref.Context().Digest(d.String()).String(), Digest: d.String(), Kernel: bi.kernel,
		Inputs: &bi.inputs, ReuseRejected: reuse.Rejected}
	p.Printf("pushed %s; kmod-attest signs it and attests its build inputs", rep.Image)
	return writeKmodResults(o.Options, ws, work.KmodBuildFile, rep)
}

// reuse decides whether something already made stands in for the build.
// The day-0 proposal builds only when containerImage does not exist. kiln
// reuses the image only when it can prove it built it from these very
// inputs: an attestation, signed by kiln's identity, over the digest at
// the build target (containerImage, or the unsigned image when kmod-sign
// follows; containerImage then carries kmod-sign's attestation). Anything
// else sitting there, whatever its tag or labels say, is rebuilt over.
//
// An upgrade-ahead run looks only at its own place (pushTo, the ahead
// tag). Any other run looks at the build target (not on --rebuild: what
// sits there was made for the kernel the cluster leaves) and then at the
// ahead tag of its kernel, which it adopts when proven.
func (o *BuildOptions) reuse(ctx context.Context, r registry.Remote, md *kmmv1beta1.ModuleDay0, plan Plan, pushTo string, bi buildInputs, id trust.Identity, p *step.Progress) (Reuse, error) {
	wrap := func(err error) error { return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err) }
	if o.TargetRelease != "" {
		u, err := proveAt(ctx, r, pushTo, id, bi.inputs)
		if err != nil {
			return Reuse{}, wrap(fmt.Errorf("checking %s: %w", pushTo, err))
		}
		if u.Proven {
			p.Printf("ModuleDay0 %s/%s: %s is %s, attested by %s for these inputs (release %s); reused", md.Namespace, md.Name, pushTo, u.Digest, id, o.TargetRelease)
		}
		u.reject(p, "")
		return u, nil
	}
	var u Reuse
	if o.Rebuild {
		p.Printf("ModuleDay0 %s/%s: cluster upgrade: %s", md.Namespace, md.Name, plan.Reason)
	} else {
		var err error
		if u, err = proveAt(ctx, r, plan.BuildTarget, id, bi.inputs); err != nil {
			return Reuse{}, wrap(fmt.Errorf("checking %s: %w", plan.BuildTarget, err))
		}
		if u.Proven {
			p.Printf("ModuleDay0 %s/%s: %s is %s, attested by %s for these inputs; reused", md.Namespace, md.Name, plan.BuildTarget, u.Digest, id)
			return u, nil
		}
		u.reject(p, "")
	}
	a, err := adoptAhead(ctx, r, plan.BuildTarget, bi.kernel, id, bi.inputs, p)
	if err != nil {
		return Reuse{}, wrap(err)
	}
	if a.Proven {
		return a, nil
	}
	a.reject(p, "")
	u.Rejected = joinRejected(u.Rejected, a.Rejected)
	return u, nil
}

// buildInputs are a kmod build's arguments and what they are made of, all
// fixed before anything is built.
type buildInputs struct {
	args   map[string]string
	kernel string
	// why says which kernelType chose kernel, and where it was read.
	why    string
	inputs trust.Inputs
}

// inputs resolves OS_AUTO and DTK_AUTO to digests once, before the build:
// the build runs FROM those digests and the attestation records them, so
// a tag moved during the build cannot slip another base in.
func (o *BuildOptions) inputs(ctx context.Context, r registry.Remote, md *kmmv1beta1.ModuleDay0, target, dockerfile string, pl Payload) (buildInputs, error) {
	wrap := func(what string, err error) error {
		return fmt.Errorf("ModuleDay0 %s/%s: %s: %w", md.Namespace, md.Name, what, err)
	}
	osd, err := resolveInput(ctx, r, pl.OSImage)
	if err != nil {
		return buildInputs{}, wrap("resolving OS_AUTO "+pl.OSImage, err)
	}
	pl.OSImage = osd.String()
	if needsDTK(dockerfile) {
		d, err := resolveInput(ctx, r, pl.DTKImage)
		if err != nil {
			return buildInputs{}, wrap("resolving DTK_AUTO "+pl.DTKImage, err)
		}
		pl.DTKImage = d.String()
	} else {
		pl.DTKImage = ""
	}
	kver, why, err := o.targetKernel(ctx, r, pl)
	if err != nil {
		return buildInputs{}, wrap("choosing the kernel to build for", err)
	}
	args, err := BuildArgs(md, dockerfile, pl, kver)
	if err != nil {
		return buildInputs{}, err
	}
	sum := sha256.Sum256([]byte(dockerfile))
	var secrets []string
	for _, s := range md.Spec.OSMapping.Build.Secrets {
		secrets = append(secrets, s.Name)
	}
	in, err := trust.KmodBuild{
		Module: md.Namespace + "/" + md.Name, Target: target, DockerfileHash: "sha256:" + hex.EncodeToString(sum[:]),
		Dockerfile: dockerfile, BuildArgs: args, OSImage: pl.OSImage, DTKImage: pl.DTKImage, KernelVersion: kver, Secrets: secrets,
	}.Inputs()
	if err != nil {
		return buildInputs{}, wrap("describing the build", err)
	}
	return buildInputs{args: args, kernel: kver, why: why, inputs: in}, nil
}

// targetKernel is the kernel the pool boots: the payload kernel of the
// pool's kernelType. KMM's proposal builds for OS_AUTO's kernel only; a
// realtime pool's image-build then swaps that kernel for kernel-rt, and
// modules built for the default kernel would sit in a folder no booted
// kernel reads.
func (o *BuildOptions) targetKernel(ctx context.Context, r registry.Remote, pl Payload) (kver, why string, err error) {
	kt, from, err := poolKernelType(o.Workspace())
	if err != nil {
		return "", "", err
	}
	ks, err := kmodbuild.ReadPayloadKernels(ctx, r, pl.OSImage, pl.DTKImage)
	if err != nil {
		return "", "", err
	}
	if kver, err = ks.For(kt); err != nil {
		return "", "", fmt.Errorf("%s: %w", from, err)
	}
	return kver, fmt.Sprintf("kernelType %s (%s)", kt, from), nil
}

// attest signs the pushed image and attests its inputs with kiln's cosign
// identity: the proof a later run needs to reuse it.
func attest(ctx context.Context, r registry.Remote, o sign.AttestOptions, image string, in trust.Inputs, p *step.Progress) error {
	si, err := o.Input(image, in)
	if err != nil {
		return err
	}
	res, err := sign.Sign(ctx, r, si)
	if err != nil {
		return err
	}
	p.Printf("signed %s and attested its build inputs (%s)", image, res.AttestationRef)
	return nil
}

// existing returns image by digest when it is in its registry.
func existing(ctx context.Context, r registry.Remote, image string) (work.KmodReport, bool, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return work.KmodReport{}, false, err
	}
	desc, err := r.HeadNamed(ctx, ref)
	if err != nil {
		if err = registry.Classify(err, "reading", image); errors.Is(err, registry.ErrNotFound) {
			return work.KmodReport{}, false, nil
		}
		return work.KmodReport{}, false, err
	}
	return work.KmodReport{Image: ref.Context().Digest(desc.Digest.String()).String(), Digest: desc.Digest.String()}, true, nil
}

// buildObjects are the ConfigMaps kmod-build reads.
type buildObjects struct {
	dockerfileCM *corev1.ConfigMap
	payload      *corev1.ConfigMap
}

// objects reads the Dockerfile ConfigMap (in the ModuleDay0's namespace)
// and the payload ConfigMap through c: the cluster's client or a
// folder's (see folder for what a manifest without a namespace means).
// Each is one Get, so the step needs no right to list ConfigMaps.
func objects(ctx context.Context, c client.Reader, md *kmmv1beta1.ModuleDay0) (*buildObjects, error) {
	cmName := md.Spec.OSMapping.Build.DockerfileConfigMap.Name
	out := &buildObjects{}
	get := func(ns, n string) (*corev1.ConfigMap, error) {
		cm := &corev1.ConfigMap{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, cm)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", ns, n, err)
		}
		return cm, nil
	}
	var err error
	if out.dockerfileCM, err = get(md.Namespace, cmName); err != nil {
		return nil, err
	}
	if out.payload, err = get(payload.Namespace, payload.OSImageURLMap); err != nil {
		return nil, err
	}
	return out, nil
}

func (b *buildObjects) dockerfile(md *kmmv1beta1.ModuleDay0) (string, error) {
	n := md.Spec.OSMapping.Build.DockerfileConfigMap.Name
	if b.dockerfileCM == nil {
		return "", fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.build.dockerfileConfigMap: ConfigMap %s/%s not found", md.Namespace, md.Name, md.Namespace, n)
	}
	df, ok := b.dockerfileCM.Data[DockerfileKey]
	if !ok || strings.TrimSpace(df) == "" {
		return "", fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.build.dockerfileConfigMap: ConfigMap %s/%s has no %q key", md.Namespace, md.Name, md.Namespace, n, DockerfileKey)
	}
	return df, nil
}

// osAuto is OS_AUTO when --os-image is empty: the payload ConfigMap's
// base OS image.
func (b *buildObjects) osAuto(md *kmmv1beta1.ModuleDay0) (string, error) {
	f, err := payload.FromObjects(b.payload, nil)
	if err != nil {
		return "", fmt.Errorf("ModuleDay0 %s/%s: finding OS_AUTO (no --os-image): %w", md.Namespace, md.Name, err)
	}
	return f.BaseOSImage, nil
}

// secretFiles is kmodbuild.SecretFiles for the ModuleDay0's own build.secrets, the
// only Secrets its build may read.
func (o *BuildOptions) secretFiles(md *kmmv1beta1.ModuleDay0) (map[string]string, error) {
	names := make([]string, 0, len(md.Spec.OSMapping.Build.Secrets))
	for _, s := range md.Spec.OSMapping.Build.Secrets {
		names = append(names, s.Name)
	}
	out, err := kmodbuild.SecretFiles(o.SecretsDir, names)
	if err != nil {
		return nil, exitcode.InputRejected(fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err))
	}
	return out, nil
}

// maxStepLine keeps a build step's line, after the 22 columns of the
// progress prefix, within the 100 columns of the Dashboard's and tkn's log
// panes; a long RUN command is cut at the end, where the Dockerfile (in
// its ConfigMap) has it whole.
const maxStepLine = 78

func clipStep(s string) string {
	r := []rune(s)
	if len(r) <= maxStepLine {
		return s
	}
	return string(r[:maxStepLine-1]) + "…"
}
