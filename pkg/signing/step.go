package signing

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// SignOptions are the flags of `kiln-steps image-sign`.
type SignOptions struct {
	step.Options
	step.RegistryOptions
	step.SigningOptions
	// Image is the image by digest: image-build's IMAGE_URL@IMAGE_DIGEST.
	Image string
	RunID string
	// PasswordFile, when it exists, holds the key password (the same Secret
	// as the key); otherwise the --key-password-env variable is used.
	PasswordFile string
	// Keyless selects Fulcio/Rekor signing instead of --key.
	Keyless     bool
	FulcioURL   string
	RekorURL    string
	IDTokenPath string
	// Predict, when set, predicts the pool's next rendered name for the
	// image (the drift gate): kiln-steps sets render.PredictFromWorkspace.
	Predict Predictor
}

// AddFlags registers image-sign's flags.
func (o *SignOptions) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	o.RegistryOptions.AddFlags(fs)
	o.SigningOptions.AddFlags(fs)
	fs.StringVar(&o.Image, "image", "", "image to sign, repository@sha256:… (image-build's IMAGE_URL@IMAGE_DIGEST)")
	fs.StringVar(&o.RunID, "run-id", os.Getenv("KILN_RUN_ID"), "id of this run (PipelineRun name), recorded in the provenance")
	fs.StringVar(&o.PasswordFile, "key-password-file", "", "file holding the key password (e.g. cosign.password next to cosign.key); when absent, --key-password-env is used")
	fs.BoolVar(&o.Keyless, "keyless", false, "sign with Fulcio/Rekor instead of --key")
	fs.StringVar(&o.FulcioURL, "fulcio-url", "https://fulcio.sigstore.dev", "Fulcio URL (keyless)")
	fs.StringVar(&o.RekorURL, "rekor-url", "https://rekor.sigstore.dev", `Rekor URL (keyless); "" skips the transparency log`)
	fs.StringVar(&o.IDTokenPath, "identity-token-path", "", "OIDC token file (keyless)")
}

// Run signs the image and attests its provenance from work/image/build.json.
func (o *SignOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.Image == "" {
		return &step.UsageError{Err: fmt.Errorf("--image is required")}
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	dir, err := o.Workspace().Ensure(step.StageImageSign)
	if err != nil {
		return err
	}
	rec, err := trust.ReadRecord(filepath.Join(dir, "build.json"))
	if err != nil {
		return err
	}
	if rec.Ref != o.Image {
		// Fail closed: never attest one image with another build's inputs.
		return fmt.Errorf("signing %s: work/image/build.json describes %s; refusing to attest inputs of another image", o.Image, rec.Ref)
	}
	in := SignInput{Image: o.Image, Inputs: rec.Inputs, RunID: o.RunID}
	pred, err := o.predict(ctx)
	if err != nil {
		return err
	}
	if pred != nil {
		in.Byproducts = []trust.Dependency{{Name: PredictedConfigByproduct, URI: "machineconfig:" + pred.Name, Digest: pred.Hash}}
	}
	if o.Keyless {
		in.Keyless = &KeylessOptions{FulcioURL: o.FulcioURL, RekorURL: o.RekorURL, IDTokenPath: o.IDTokenPath}
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
	p := step.NewProgress(s.Out, step.StageImageSign)
	p.Printf("signing %s and attesting its provenance (run %q)", o.Image, o.RunID)
	res, err := Sign(ctx, r, in)
	if err != nil {
		return err
	}
	p.Printf("signature %s, attestation %s", res.SignatureRef, res.AttestationRef)
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "sign.json"), b, 0o644); err != nil {
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
		if err := os.WriteFile(filepath.Join(dir, trust.PredictionFile), b, 0o644); err != nil {
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
// (render.PredictFromWorkspace; nil result when there is nothing to
// predict from). A hook rather than an import: pkg/render's tests import
// pkg/kmod, which imports this package.
type Predictor func(ctx context.Context, ws step.Workspace, image string) (*trust.Prediction, error)

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
	step.RegistryOptions
	// IdentityOptions' --public-key is the key the policy requires; the
	// policy CRI-O enforces names a key, so keyless flags are refused.
	step.IdentityOptions
	Image       string
	NodeKeyPath string
}

// AddFlags registers verify's flags.
func (o *VerifyOptions) AddFlags(fs *pflag.FlagSet) {
	o.Options.AddFlags(fs)
	o.RegistryOptions.AddFlags(fs)
	o.IdentityOptions.AddFlags(fs)
	fs.StringVar(&o.Image, "image", "", "image to check, as nodes pull it (repository@sha256:…)")
	fs.StringVar(&o.NodeKeyPath, "node-key-path", DefaultNodeKeyPath, "where the key lives on nodes, for the policy fragment")
}

// Run evaluates the policy and writes the fragment and VERIFIED.
func (o *VerifyOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Options.Validate(); err != nil {
		return err
	}
	if o.Image == "" {
		return &step.UsageError{Err: fmt.Errorf("--image is required")}
	}
	if o.CertificateRoots != "" || o.CertificateIdentity != "" || o.CertificateOIDCIssuer != "" {
		return &step.UsageError{Err: fmt.Errorf("verify: the node policy requires a public key (--public-key); keyless identities are not supported")}
	}
	dir, err := o.Workspace().Ensure(step.StageVerify)
	if err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	ref, err := r.ParseRef(o.Image)
	if err != nil {
		return err
	}
	p := step.NewProgress(s.Out, step.StageVerify)
	files, verr := VerifyPolicy(ctx, PolicyInput{
		Image: o.Image, KeyPath: o.PublicKey, NodeKeyPath: o.NodeKeyPath, AuthFile: r.AuthFile,
		Insecure: o.IsInsecure(ref.Context().RegistryStr()), RegistriesDir: o.ConfigDir, OutDir: dir,
	})
	if files != nil {
		p.Printf("policy fragment for nodes: %s, %s", files.Policy, files.Registries)
	}
	results := o.Results()
	if err := results.Set("VERIFIED", fmt.Sprint(verr == nil)); err != nil {
		return err
	}
	if err := results.Write(); err != nil {
		return err
	}
	if verr != nil {
		return verr
	}
	p.Printf("%s passes the sigstoreSigned policy", o.Image)
	return nil
}
