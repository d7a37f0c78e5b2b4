package kmod

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// SignOptions are the flags of `kiln-steps kmod-sign`.
type SignOptions struct {
	step.Options
	registry.RegistryOptions
	// KubeOptions: the ModuleDay0's status records the signed image, in
	// the cluster or, with --source dir:, in work/kmod/manifests/.
	kube.KubeOptions
	// CertFile and KeyFile are the mounted Secrets of sign.certSecret and
	// sign.keySecret (KMM's keys "cert" and "key").
	CertFile, KeyFile string
	Hash              string
	// Rebuild signs even when containerImage exists (the day-0 proposal's "Cluster upgrade").
	Rebuild bool
	// TargetRelease, set on upgrade-ahead runs, is the release they prepare:
	// the signed image goes to the kernel's ahead tag of containerImage
	// (AheadRef), never to containerImage's own tag.
	TargetRelease string
	// Identity proves reuse; Attest signs and attests what is pushed.
	Identity step.IdentityOptions
	Attest   sign.AttestOptions
}

// Defaults of kmod-sign: where its Task mounts sign.certSecret and
// sign.keySecret, and the kernel's default module signature hash.
const (
	DefaultModuleCert = "/etc/kiln/kmod-signing-cert/cert"
	DefaultModuleKey  = "/etc/kiln/kmod-signing-key/key"
	DefaultHash       = "sha256"
)

// DefaultSignOptions returns kmod-sign's options with their defaults.
func DefaultSignOptions() *SignOptions {
	return &SignOptions{
		Options: step.DefaultOptions(), KubeOptions: kube.DefaultKubeOptions(),
		CertFile: DefaultModuleCert, KeyFile: DefaultModuleKey, Hash: DefaultHash,
		Identity: step.DefaultIdentityOptions(), Attest: sign.DefaultAttestOptions(),
	}
}

// Validate reports every bad flag at once.
func (o *SignOptions) Validate() error {
	var hash error
	if _, ok := modsign.Hashes[o.Hash]; !ok {
		hash = fmt.Errorf("--hash %q: want sha256, sha384 or sha512", o.Hash)
	}
	return exitcode.ValidationErrors(o.Options.Validate(), o.KubeOptions.Validate(), o.Identity.Validate(), o.Attest.Validate(), hash,
		validTargetRelease(o.TargetRelease))
}

// Run signs the ModuleDay0's modules and pushes containerImage.
func (o *SignOptions) Run(ctx context.Context, s step.Streams) error {
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
	if md.Spec.OSMapping.Sign == nil {
		return fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.sign is not set; kmod-sign has nothing to do", md.Namespace, md.Name)
	}
	if err := md.Validate(); err != nil {
		return exitcode.InputRejected(err)
	}
	signer, err := o.signer(md)
	if err != nil {
		return err
	}
	if err := o.Attest.Check(); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	p := step.NewProgress(s.Out, work.StageKmodSign)
	src, err := o.source(ws, md)
	if err != nil {
		return err
	}
	sin, err := o.inputs(ctx, r, md, src, signer)
	if err != nil {
		return err
	}
	pushTo, err := pushPlace(o.TargetRelease, md.Spec.OSMapping.ContainerImage, sin.kernel, sin.inputs)
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	reuse, err := o.reuse(ctx, r, md, sin, signer.Certificate(), pushTo, p)
	if err != nil {
		return err
	}
	if reuse.Proven {
		p.Printf("ModuleDay0 %s/%s: %s, attested for these inputs, its %d module(s) signed by %q; nothing to sign",
			md.Namespace, md.Name, reuse.Image, len(reuse.Signed), signer.Certificate().Subject.CommonName)
		rep := work.KmodReport{Image: reuse.Image, Digest: reuse.Digest, Kernel: sin.kernel, Signed: reuse.Signed, Inputs: &sin.inputs, Reused: true}
		return writeKmodResults(o.Options, ws, work.KmodSignFile, rep)
	}
	in, err := signInput(ctx, r, sin.source.String(), pushTo, md)
	if err != nil {
		return err
	}
	in.Signer = signer
	p.Printf("signing %v in %s for ModuleDay0 %s/%s", md.Spec.OSMapping.Sign.FilesToSign, sin.source, md.Namespace, md.Name)
	res, err := modsign.SignImage(ctx, in)
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	for _, f := range res.Signed {
		p.Printf("signed %s (kernel %s)", f, res.KernelFullVersion)
	}
	for _, m := range append(append([]modsign.Move(nil), res.Placement.Modules...), res.Placement.Firmware...) {
		p.Printf("placed %s at %s", m.From, m.To)
	}
	p.Printf("depmod %s wrote %d file(s)", res.KernelFullVersion, len(res.Placement.Depmod))
	ref := in.Target.Context().Digest(res.Digest.String()).String()
	if err := attest(ctx, r, o.Attest, ref, sin.inputs, p); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	rep := work.KmodReport{Image: ref, Digest: res.Digest.String(), Kernel: res.KernelFullVersion, Signed: res.Signed,
		Inputs: &sin.inputs, ReuseRejected: reuse.Rejected, Placement: res.Placement}
	if err := writeKmodResults(o.Options, ws, work.KmodSignFile, rep); err != nil {
		return err
	}
	if o.TargetRelease != "" {
		p.Printf("ModuleDay0 %s/%s: signed ahead for release %s; its status keeps describing containerImage", md.Namespace, md.Name, o.TargetRelease)
		return nil
	}
	c, err := newClient(&o.KubeOptions, ws)
	if err != nil {
		return err
	}
	return recordBuilt(ctx, c, md, ReasonSigned, fmt.Sprintf("signed %d modules into %s", len(res.Signed), ref), rep.Digest, p)
}

// signInputs are a kmod signing's source by digest and its inputs.
type signInputs struct {
	source name.Digest
	kernel string
	inputs trust.Inputs
}

// inputs resolves the unsigned image to its digest once: that digest is
// signed and attested, whatever its tag holds later.
func (o *SignOptions) inputs(ctx context.Context, r registry.Remote, md *kmmv1beta1.ModuleDay0, src string, s *modsign.Signer) (signInputs, error) {
	wrap := func(err error) error {
		return fmt.Errorf("ModuleDay0 %s/%s: reading the unsigned image %s: %w", md.Namespace, md.Name, src, err)
	}
	d, err := resolveInput(ctx, r, src)
	if err != nil {
		return signInputs{}, wrap(err)
	}
	img, err := r.Image(ctx, d)
	if err != nil {
		return signInputs{}, wrap(registry.Classify(err, "reading", d.String()))
	}
	kver, err := modsign.ModuleKernel(img)
	if err != nil {
		return signInputs{}, wrap(err)
	}
	certHash, serial := modsign.CertID(s.Certificate())
	in, err := trust.KmodSign{
		Module: md.Namespace + "/" + md.Name, Target: md.Spec.OSMapping.ContainerImage, Unsigned: d.String(),
		CertHash: certHash, CertSerial: serial, Hash: o.Hash, FilesToSign: md.Spec.OSMapping.Sign.FilesToSign, KernelVersion: kver,
	}.Inputs()
	if err != nil {
		return signInputs{}, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	return signInputs{source: d, kernel: kver, inputs: in}, nil
}

// reuse decides whether a signed image already made stands in for
// signing. The day-0 proposal signs only when containerImage does not
// exist. kiln reuses it only when it proves it signed it: kiln's
// attestation for these inputs (this unsigned digest, this certificate)
// AND every filesToSign module in it signed by the current certificate.
// An unsigned image pushed to the tag, or modules signed with a
// rotated-out key, are signed again.
//
// An upgrade-ahead run looks only at its own place (pushTo, the ahead
// tag). Any other run looks at containerImage (not on --rebuild) and then
// at the ahead tag of its kernel, which it adopts when proven.
func (o *SignOptions) reuse(ctx context.Context, r registry.Remote, md *kmmv1beta1.ModuleDay0, sin signInputs, cert *x509.Certificate, pushTo string, p *step.Progress) (Reuse, error) {
	target := md.Spec.OSMapping.ContainerImage
	id, err := o.Identity.Files().Load()
	if err != nil {
		return Reuse{}, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	if o.TargetRelease != "" {
		u, err := o.reusableAt(ctx, r, md, pushTo, id, sin, cert)
		if err == nil {
			u.reject(p, "")
		}
		return u, err
	}
	var u Reuse
	if !o.Rebuild {
		if u, err = o.reusableAt(ctx, r, md, target, id, sin, cert); err != nil || u.Proven {
			return u, err
		}
		u.reject(p, "")
	}
	at, err := AheadRef(target, sin.kernel, sin.inputs)
	if err != nil {
		return Reuse{}, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	a, err := o.reusableAt(ctx, r, md, at, id, sin, cert)
	if err != nil {
		return Reuse{}, err
	}
	if a.Proven {
		if a, err = promote(ctx, r, target, at, a, p); err != nil {
			return Reuse{}, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
		}
		if a.Proven {
			return a, nil
		}
	}
	a.reject(p, "")
	u.Rejected = joinRejected(u.Rejected, a.Rejected)
	return u, nil
}

// reusableAt proves what sits at target (containerImage or its ahead tag)
// and then checks each module filesToSign names in it against the current
// certificate.
func (o *SignOptions) reusableAt(ctx context.Context, r registry.Remote, md *kmmv1beta1.ModuleDay0, target string, id trust.Identity, sin signInputs, cert *x509.Certificate) (Reuse, error) {
	u, err := proveAt(ctx, r, target, id, sin.inputs)
	if err != nil {
		return Reuse{}, fmt.Errorf("ModuleDay0 %s/%s: checking spec.osMapping.containerImage %s: %w", md.Namespace, md.Name, target, err)
	}
	if !u.Proven {
		return u, nil
	}
	ref, err := name.NewDigest(u.Image, name.WeakValidation)
	if err != nil {
		return Reuse{}, err
	}
	img, err := r.ImageNamed(ctx, ref)
	if err != nil {
		return Reuse{}, registry.Classify(err, "reading", u.Image)
	}
	signed, err := modsign.CheckModuleSigners(img, md.Spec.OSMapping.Sign.FilesToSign, sin.kernel, cert)
	if err != nil {
		u.Proven, u.Rejected = false, fmt.Sprintf("%s holds %s, attested by kiln, but its %v", target, u.Digest, err)
		return u, nil
	}
	u.Signed = signed
	return u, nil
}

func (o *SignOptions) signer(md *kmmv1beta1.ModuleDay0) (*modsign.Signer, error) {
	h, ok := modsign.Hashes[o.Hash]
	if !ok {
		return nil, &exitcode.UsageError{Err: fmt.Errorf("--hash %q: want sha256, sha384 or sha512", o.Hash)}
	}
	sign := md.Spec.OSMapping.Sign
	certData, err := os.ReadFile(o.CertFile)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: reading spec.osMapping.sign.certSecret %q: %w", md.Namespace, md.Name, sign.CertSecret.Name, err)
	}
	keyData, err := os.ReadFile(o.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: reading spec.osMapping.sign.keySecret %q: %w", md.Namespace, md.Name, sign.KeySecret.Name, err)
	}
	cert, key, err := modsign.LoadKeyPair(certData, keyData)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: Secrets %q/%q: %w", md.Namespace, md.Name, sign.CertSecret.Name, sign.KeySecret.Name, err)
	}
	signer, err := modsign.NewSigner(cert, key, h)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: Secrets %q/%q: %w", md.Namespace, md.Name, sign.CertSecret.Name, sign.KeySecret.Name, err)
	}
	return signer, nil
}

// source is the image to sign: kmod-build's output when it ran, else
// sign.unsignedImage.
func (o *SignOptions) source(ws work.Workspace, md *kmmv1beta1.ModuleDay0) (string, error) {
	rep, err := readBuildReport(ws)
	switch {
	case err == nil:
		if rep.Image == "" {
			return "", fmt.Errorf("reading kmod-build's report: it names no image")
		}
		return rep.Image, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", err
	}
	if u := md.Spec.OSMapping.Sign.UnsignedImage; u != "" {
		return u, nil
	}
	return "", fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.sign.unsignedImage is empty and kmod-build did not run", md.Namespace, md.Name)
}

func signInput(ctx context.Context, r registry.Remote, src, pushTo string, md *kmmv1beta1.ModuleDay0) (modsign.SignImageInput, error) {
	srcRef, err := r.ParseRef(src)
	if err != nil {
		return modsign.SignImageInput{}, err
	}
	dstRef, err := r.ParseRef(pushTo)
	if err != nil {
		return modsign.SignImageInput{}, fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.containerImage (pushed to %s): %w", md.Namespace, md.Name, pushTo, err)
	}
	return modsign.SignImageInput{Source: srcRef, Target: dstRef, FilesToSign: md.Spec.OSMapping.Sign.FilesToSign, Remote: r}, nil
}

// ReadModuleDay0 reads the ModuleDay0 render left in the workspace.
func ReadModuleDay0(ws work.Workspace) (*kmmv1beta1.ModuleDay0, error) {
	p := ws.ModuleDay0Path()
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("reading the pool's ModuleDay0 (render writes %s when one selects the pool): %w", p, err)
	}
	md := &kmmv1beta1.ModuleDay0{}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(md); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", p, err)
	}
	return md, nil
}

// writeKmodResults writes the report and KMOD_IMAGE_URL/KMOD_IMAGE_DIGEST.
func writeKmodResults(o step.Options, ws work.Workspace, file string, rep work.KmodReport) error {
	dir, err := ws.Ensure(work.StageKmodSign)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, file), b, 0o644); err != nil {
		return fmt.Errorf("writing kmod report: %w", err)
	}
	// Chains' type hint: URL@DIGEST is the image, so the URL is the
	// repository; the report in the workspace keeps the digest reference.
	ref, err := name.NewDigest(rep.Image)
	if err != nil {
		return fmt.Errorf("writing kmod results: image %q: %w", rep.Image, err)
	}
	res := o.Results()
	// Empty when nothing was rejected: the image was reused, or the
	// target was free.
	if err := res.Set("REUSE_REJECTED", rep.ReuseRejected); err != nil {
		return err
	}
	// "true" when nothing was built or signed: the image was proven at the
	// target, or at its upgrade-ahead tag and adopted.
	if err := res.Set("REUSED", fmt.Sprint(rep.Reused)); err != nil {
		return err
	}
	if err := res.Set("KMOD_IMAGE_URL", ref.Context().Name()); err != nil {
		return err
	}
	if err := res.Set("KMOD_IMAGE_DIGEST", rep.Digest); err != nil {
		return err
	}
	return res.Write()
}
