package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// SignOptions are the flags of `kiln-steps image-sign`.
type SignOptions struct {
	step.Options
	registry.RegistryOptions
	// AttestOptions are the key, password and keyless settings, shared
	// with kmod-build and kmod-sign (one identity signs everything).
	// PasswordFile, when it exists, holds the key password (the same
	// Secret as the key); otherwise the --key-password-env variable is
	// used. Keyless selects Fulcio/Rekor signing instead of --key.
	sign.AttestOptions
	// Image is the image by digest: image-build's IMAGE_URL@IMAGE_DIGEST.
	Image string
	// Predict, when set, predicts the pool's next rendered name for the
	// image (the drift gate): kiln-steps sets mcrender.PredictFromWorkspace.
	Predict Predictor
}

// DefaultSignOptions returns image-sign's options with their defaults.
func DefaultSignOptions() *SignOptions {
	return &SignOptions{Options: step.DefaultOptions(), AttestOptions: sign.DefaultAttestOptions()}
}

// Validate reports every bad flag at once, before any registry is asked.
func (o *SignOptions) Validate() error {
	return exitcode.ValidationErrors(o.Options.Validate(), imageref.RequireDigestRef("image", o.Image), o.AttestOptions.Validate())
}

// Run signs the image and attests its provenance from work/image/build.json.
func (o *SignOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	dir, err := o.Workspace().Ensure(work.StageImageSign)
	if err != nil {
		return err
	}
	rec, err := trust.ReadRecord(filepath.Join(dir, work.BuildReportFile))
	if err != nil {
		return err
	}
	if rec.Ref != o.Image {
		// Fail closed: never attest one image with another build's inputs.
		return fmt.Errorf("signing %s: work/image/build.json describes %s; refusing to attest inputs of another image", o.Image, rec.Ref)
	}
	in := sign.SignInput{Image: o.Image, Inputs: rec.Inputs, RunID: o.RunID}
	lint, err := nodeLintByproduct(rec)
	if err != nil {
		return fmt.Errorf("signing %s: %w", o.Image, err)
	}
	pred, err := o.predict(ctx)
	if err != nil {
		return err
	}
	if pred != nil {
		in.Byproducts = []trust.Dependency{{Name: PredictedConfigByproduct, URI: "machineconfig:" + pred.Name, Digest: pred.Hash}}
	}
	if lint != nil {
		in.Byproducts = append(in.Byproducts, *lint)
	}
	if o.Keyless {
		in.Keyless = &sign.KeylessOptions{FulcioURL: o.FulcioURL, RekorURL: o.RekorURL, IDTokenPath: o.IDTokenPath}
	} else {
		key, err := os.ReadFile(o.KeyPath)
		if err != nil {
			return fmt.Errorf("signing %s: reading the cosign key: %w", o.Image, err)
		}
		in.Key, in.Password = key, o.Password()
		if o.PasswordFile != "" {
			if pw, err := os.ReadFile(o.PasswordFile); err == nil {
				in.Password = bytes.TrimRight(pw, "\r\n")
			} else if !os.IsNotExist(err) {
				return fmt.Errorf("signing %s: reading the key password file: %w", o.Image, err)
			}
		}
	}
	p := step.NewProgress(s.Out, work.StageImageSign)
	p.Printf("signing %s and attesting its provenance (run %q)", o.Image, o.RunID)
	res, err := sign.Sign(ctx, r, in)
	if err != nil {
		return err
	}
	p.Printf("signature %s, attestation %s", res.SignatureRef, res.AttestationRef)
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, work.SignResultFile), b, 0o644); err != nil {
		return fmt.Errorf("writing sign report: %w", err)
	}
	results := o.Results()
	if err := results.Set("SIGNATURE_REF", res.SignatureRef); err != nil {
		return err
	}
	if err := results.Set("ATTESTATION_REF", res.AttestationRef); err != nil {
		return err
	}
	if pred != nil {
		if err := results.Set("PREDICTED_RENDERED_NAME", pred.Name); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(pred, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, work.PredictionFile), b, 0o644); err != nil {
			return fmt.Errorf("writing the prediction record: %w", err)
		}
		p.Printf("predicted rendered config with this image: %s", pred.Name)
	}
	return results.Write()
}

// PredictedConfigByproduct names the drift gate's prediction among the
// provenance's runDetails.byproducts.
const PredictedConfigByproduct = "predicted-rendered-config"

// Predictor is the drift gate's prediction for image from the workspace
// (mcrender.PredictFromWorkspace; nil result when there is nothing to
// predict from). A hook rather than an import: pkg/render's tests import
// pkg/kmod, which imports this package.
type Predictor func(ctx context.Context, ws work.Workspace, image string) (*trust.Prediction, error)

// predict runs the hook; image-sign is where it runs because it is the
// first stage that knows the digest and the one that attests.
func (o *SignOptions) predict(ctx context.Context) (*trust.Prediction, error) {
	if o.Predict == nil {
		return nil, nil
	}
	p, err := o.Predict(ctx, o.Workspace(), o.Image)
	if err != nil {
		return nil, fmt.Errorf("signing %s: predicting the rendered config: %w", o.Image, err)
	}
	return p, nil
}

// VerifyOptions are the flags of `kiln-steps verify`.
type VerifyOptions struct {
	step.Options
	registry.RegistryOptions
	// IdentityOptions' --public-key is the key the policy requires; the
	// policy CRI-O enforces names a key, so keyless flags are refused.
	step.IdentityOptions
	Image       string
	NodeKeyPath string

	result *VerifyResult
}

// DefaultVerifyOptions returns verify's options with their defaults.
func DefaultVerifyOptions() *VerifyOptions {
	return &VerifyOptions{Options: step.DefaultOptions(), IdentityOptions: step.DefaultIdentityOptions(), NodeKeyPath: sign.DefaultNodeKeyPath}
}

// Validate reports every bad flag at once. A tag is refused here, before
// the registry is asked: the policy is evaluated for one digest.
func (o *VerifyOptions) Validate() error {
	var keyless error
	if o.CertificateRoots != "" || o.CertificateIdentity != "" || o.CertificateOIDCIssuer != "" {
		keyless = fmt.Errorf("the node policy requires a public key (--public-key); keyless identities are not supported")
	}
	return exitcode.ValidationErrors(o.Options.Validate(), imageref.RequireDigestRef("image", o.Image), keyless)
}

// Run evaluates the policy and writes the fragment and VERIFIED.
func (o *VerifyOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	dir, err := o.Workspace().Ensure(work.StageVerify)
	if err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	// A key that cannot be read would be rejected by containers/image
	// while it evaluates the policy, which reads as a refusal of the
	// image; it is a bad --public-key.
	if _, err := sign.LoadVerifier(o.PublicKey); err != nil {
		return exitcode.UsageErrorf("--public-key %s: %w", o.PublicKey, err)
	}
	ref, err := r.ParseRef(o.Image)
	if err != nil {
		return err
	}
	p := step.NewProgress(s.Out, work.StageVerify)
	files, verr := sign.VerifyPolicy(ctx, sign.PolicyInput{
		Image: o.Image, KeyPath: o.PublicKey, NodeKeyPath: o.NodeKeyPath, AuthFile: r.AuthFile,
		Insecure: o.IsInsecure(ref.Context().RegistryStr()), RegistriesDir: o.ConfigDir, OutDir: dir,
	})
	if files != nil {
		p.Printf("policy fragment for nodes: %s, %s", files.Policy, files.Registries)
	}
	o.result = newVerifyResult(o.Image, files, verr)
	results := o.Results()
	if err := results.Set("VERIFIED", fmt.Sprint(verr == nil)); err != nil {
		return err
	}
	if err := results.Write(); err != nil {
		return err
	}
	switch {
	case errors.Is(verr, sign.ErrPolicy):
		return exitcode.Refused(verr)
	case verr != nil:
		// The registry did not answer (VerifyPolicy's faultOf): no
		// verdict, a failure.
		return verr
	}
	p.Printf("%s passes the sigstoreSigned policy", o.Image)
	return nil
}
