package kmod

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// AttestOptions are the flags of `kiln-steps kmod-attest`: the second step
// of the kmod-build Task. kmod-build runs the user's Dockerfile and holds no
// signing key; this step runs no user code, holds kiln's cosign key (the
// only step of the Task that mounts it), and signs and attests the image
// kmod-build pushed, with the inputs kmod-build recorded.
type AttestOptions struct {
	step.Options
	registry.RegistryOptions
	// KubeOptions: the ModuleDay0's status records the attested image, in
	// the cluster or, with --source dir:, in work/kmod/manifests/.
	kube.KubeOptions
	// Rebuild is kmod-build's --rebuild: it picks the same build target.
	Rebuild bool
	// TargetRelease is kmod-build's --target-release: an upgrade-ahead
	// image is attested but not recorded in the ModuleDay0's status, which
	// describes containerImage, the image the running pool uses.
	TargetRelease string
	Attest        sign.AttestOptions
}

// DefaultAttestOptions returns kmod-attest's options with their defaults.
func DefaultAttestOptions() *AttestOptions {
	return &AttestOptions{Options: step.DefaultOptions(), KubeOptions: kube.DefaultKubeOptions(), Attest: sign.DefaultAttestOptions()}
}

// Validate reports every bad flag at once.
func (o *AttestOptions) Validate() error {
	return exitcode.ValidationErrors(o.Options.Validate(), o.KubeOptions.Validate(), o.Attest.Validate(), validTargetRelease(o.TargetRelease))
}

// Run signs and attests kmod-build's image, unless kmod-build reused a
// proven one.
func (o *AttestOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	ws := o.Workspace()
	md, err := ReadModuleDay0(ws)
	if err != nil {
		return err
	}
	rep, err := readBuildReport(ws)
	if err != nil {
		return err
	}
	p := step.NewProgress(s.Out, work.StageKmodBuild)
	if rep.Reused {
		p.Printf("ModuleDay0 %s/%s: kmod-build reused %s, already attested; nothing to attest", md.Namespace, md.Name, rep.Image)
		return nil
	}
	in, err := o.checkReport(md, rep)
	if err != nil {
		return exitcode.InputRejected(fmt.Errorf("ModuleDay0 %s/%s: kmod-build's report %s: %w", md.Namespace, md.Name, work.KmodBuildFile, err))
	}
	if err := o.Attest.Check(); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	if err := attest(ctx, r, o.Attest, rep.Image, *rep.Inputs, p); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	if o.TargetRelease != "" {
		p.Printf("ModuleDay0 %s/%s: built ahead for release %s; its status keeps describing containerImage", md.Namespace, md.Name, o.TargetRelease)
		return nil
	}
	c, err := newClient(&o.KubeOptions, ws)
	if err != nil {
		return err
	}
	return recordBuilt(ctx, c, md, ReasonBuilt, fmt.Sprintf("built %s for kernel %s", rep.Image, in.KernelVersion), rep.Digest, p)
}

// readBuildReport reads kmod-build's report from the workspace.
func readBuildReport(ws work.Workspace) (work.KmodReport, error) {
	var rep work.KmodReport
	p := filepath.Join(ws.StageDir(work.StageKmodBuild), work.KmodBuildFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return rep, fmt.Errorf("reading kmod-build's report: %w", err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		return rep, fmt.Errorf("decoding kmod-build's report %s: %w", p, err)
	}
	return rep, nil
}

// checkReport refuses to sign anything but what this ModuleDay0's build
// makes: the image by digest in the build target's repository, attested
// with kmod-build inputs of this very ModuleDay0 and target.
func (o *AttestOptions) checkReport(md *kmmv1beta1.ModuleDay0, rep work.KmodReport) (trust.KmodBuild, error) {
	if md.Spec.OSMapping.Build == nil {
		return trust.KmodBuild{}, fmt.Errorf("spec.osMapping.build is not set; kmod-build made nothing to attest")
	}
	plan, err := Decide(md, Facts{Rebuild: o.Rebuild})
	if err != nil {
		return trust.KmodBuild{}, err
	}
	ref, err := name.NewDigest(rep.Image)
	if err != nil {
		return trust.KmodBuild{}, fmt.Errorf("image %q: %w", rep.Image, err)
	}
	target, err := name.ParseReference(plan.BuildTarget)
	if err != nil {
		return trust.KmodBuild{}, fmt.Errorf("build target %q: %w", plan.BuildTarget, err)
	}
	switch {
	case ref.DigestStr() != rep.Digest:
		return trust.KmodBuild{}, fmt.Errorf("image %s and digest %s disagree", rep.Image, rep.Digest)
	case ref.Context().Name() != target.Context().Name():
		return trust.KmodBuild{}, fmt.Errorf("image %s is not in the build target's repository %s", rep.Image, target.Context().Name())
	case rep.Inputs == nil:
		return trust.KmodBuild{}, fmt.Errorf("no inputs recorded for %s", rep.Image)
	}
	in, err := trust.KmodBuildOf(*rep.Inputs)
	if err != nil {
		return trust.KmodBuild{}, err
	}
	if want := md.Namespace + "/" + md.Name; in.Module != want || in.Target != plan.BuildTarget {
		return trust.KmodBuild{}, fmt.Errorf("inputs of ModuleDay0 %s for target %s, want %s for %s", in.Module, in.Target, want, plan.BuildTarget)
	}
	return in, nil
}
