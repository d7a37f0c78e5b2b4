package kmod

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/pflag"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
)

// BuildReportFile is kmod-build's report; kmod-sign signs its image.
const BuildReportFile = "build.json"

// SignOptions are the flags of `kiln-steps kmod-sign`.
type SignOptions struct {
	step.Options
	step.RegistryOptions
	// KubeOptions: with --source cluster the ModuleDay0's status records
	// the signed image.
	step.KubeOptions
	// CertFile and KeyFile are the mounted Secrets of sign.certSecret and
	// sign.keySecret (KMM's keys "cert" and "key").
	CertFile, KeyFile string
	Hash              string
	// Rebuild signs even when containerImage exists (seed 003 upgrade).
	Rebuild bool
}

// AddFlags registers kmod-sign's flags.
func (o *SignOptions) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	o.RegistryOptions.AddFlags(fs)
	o.KubeOptions.AddFlags(fs)
	fs.StringVar(&o.CertFile, "cert-file", "/etc/kiln/kmod-signing-cert/cert", "signing certificate (sign.certSecret, key \"cert\")")
	fs.StringVar(&o.KeyFile, "key-file", "/etc/kiln/kmod-signing-key/key", "signing key (sign.keySecret, key \"key\")")
	fs.StringVar(&o.Hash, "hash", "sha256", "module signature hash: sha256, sha384 or sha512")
	fs.BoolVar(&o.Rebuild, "rebuild", false, "sign even when containerImage exists (seed 003 cluster upgrade; set by the trigger)")
}

// KmodReport is what kmod-build and kmod-sign leave in work/kmod/.
type KmodReport struct {
	Image  string   `json:"image"`
	Digest string   `json:"digest"`
	Kernel string   `json:"kernelFullVersion,omitempty"`
	Signed []string `json:"signed,omitempty"`
}

// Run signs the ModuleDay0's modules and pushes containerImage.
func (o *SignOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
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
		return err
	}
	signer, err := o.signer(md)
	if err != nil {
		return err
	}
	r := registry.RemoteFrom(o.RegistryOptions)
	p := step.NewProgress(s.Out, step.StageKmodSign)
	// Seed 003 signs only when containerImage does not exist yet: a rerun
	// must not stack another signed layer on the signed image.
	if rep, ok, err := existing(ctx, r, md.Spec.OSMapping.ContainerImage); err != nil {
		return err
	} else if ok && !o.Rebuild {
		p.Printf("ModuleDay0 %s/%s: containerImage %s exists; nothing to sign", md.Namespace, md.Name, rep.Image)
		return writeKmodResults(o.Options, ws, "sign.json", rep)
	}
	src, err := o.source(ws, md)
	if err != nil {
		return err
	}
	in, err := signInput(ctx, r, src, md)
	if err != nil {
		return err
	}
	in.Signer = signer
	p.Printf("signing %v in %s for ModuleDay0 %s/%s", md.Spec.OSMapping.Sign.FilesToSign, src, md.Namespace, md.Name)
	res, err := SignImage(ctx, in)
	if err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
	}
	for _, f := range res.Signed {
		p.Printf("signed %s (kernel %s)", f, res.KernelFullVersion)
	}
	ref := in.Target.Context().Digest(res.Digest.String()).String()
	rep := KmodReport{Image: ref, Digest: res.Digest.String(), Kernel: res.KernelFullVersion, Signed: res.Signed}
	if err := writeKmodResults(o.Options, ws, "sign.json", rep); err != nil {
		return err
	}
	return recordBuilt(ctx, o.KubeOptions, md, ReasonSigned, fmt.Sprintf("signed %d modules into %s", len(res.Signed), ref), rep.Digest, p)
}

func (o *SignOptions) signer(md *kmmv1beta1.ModuleDay0) (*Signer, error) {
	hashes := map[string]crypto.Hash{"sha256": crypto.SHA256, "sha384": crypto.SHA384, "sha512": crypto.SHA512}
	h, ok := hashes[o.Hash]
	if !ok {
		return nil, &step.UsageError{Err: fmt.Errorf("--hash %q: want sha256, sha384 or sha512", o.Hash)}
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
	cert, key, err := LoadKeyPair(certData, keyData)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: Secrets %q/%q: %w", md.Namespace, md.Name, sign.CertSecret.Name, sign.KeySecret.Name, err)
	}
	signer, err := NewSigner(cert, key, h)
	if err != nil {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: Secrets %q/%q: %w", md.Namespace, md.Name, sign.CertSecret.Name, sign.KeySecret.Name, err)
	}
	return signer, nil
}

// source is the image to sign: kmod-build's output when it ran, else
// sign.unsignedImage.
func (o *SignOptions) source(ws step.Workspace, md *kmmv1beta1.ModuleDay0) (string, error) {
	var rep KmodReport
	b, err := os.ReadFile(filepath.Join(ws.StageDir(step.StageKmodBuild), BuildReportFile))
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &rep); err != nil || rep.Image == "" {
			return "", fmt.Errorf("reading kmod-build's report: %v", err)
		}
		return rep.Image, nil
	case !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("reading kmod-build's report: %w", err)
	}
	if u := md.Spec.OSMapping.Sign.UnsignedImage; u != "" {
		return u, nil
	}
	return "", fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.sign.unsignedImage is empty and kmod-build did not run", md.Namespace, md.Name)
}

func signInput(ctx context.Context, r registry.Remote, src string, md *kmmv1beta1.ModuleDay0) (SignImageInput, error) {
	srcRef, err := r.ParseRef(src)
	if err != nil {
		return SignImageInput{}, err
	}
	dstRef, err := r.ParseRef(md.Spec.OSMapping.ContainerImage)
	if err != nil {
		return SignImageInput{}, fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.containerImage: %w", md.Namespace, md.Name, err)
	}
	opts, err := r.Options(ctx)
	if err != nil {
		return SignImageInput{}, err
	}
	return SignImageInput{Source: srcRef, Target: dstRef, FilesToSign: md.Spec.OSMapping.Sign.FilesToSign, Options: opts}, nil
}

// ReadModuleDay0 reads the ModuleDay0 render left in the workspace.
func ReadModuleDay0(ws step.Workspace) (*kmmv1beta1.ModuleDay0, error) {
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
func writeKmodResults(o step.Options, ws step.Workspace, file string, rep KmodReport) error {
	dir, err := ws.Ensure(step.StageKmodSign)
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
	if err := res.Set("KMOD_IMAGE_URL", ref.Context().Name()); err != nil {
		return err
	}
	if err := res.Set("KMOD_IMAGE_DIGEST", rep.Digest); err != nil {
		return err
	}
	return res.Write()
}
