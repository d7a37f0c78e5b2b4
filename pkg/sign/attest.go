package sign

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kiln-dev/kiln/pkg/trust"
)

// AttestOptions are the cosign flags of a step that signs and attests what
// it pushes (kmod-build, kmod-sign): the same key, password and keyless
// settings as image-sign, so every object kiln makes is signed by one
// identity.
type AttestOptions struct {
	SigningOptions
	PasswordFile string
	Keyless      bool
	FulcioURL    string
	RekorURL     string
	IDTokenPath  string
	RunID        string
}

// Defaults of the keyless signing endpoints: the public Sigstore instance.
const (
	DefaultFulcioURL = "https://fulcio.sigstore.dev"
	DefaultRekorURL  = "https://rekor.sigstore.dev"
)

// DefaultAttestOptions returns the attest options with their defaults.
func DefaultAttestOptions() AttestOptions {
	return AttestOptions{SigningOptions: DefaultSigningOptions(), FulcioURL: DefaultFulcioURL, RekorURL: DefaultRekorURL}
}

// Validate reports a keyless setup without its Fulcio URL or token. It
// reads no file: Check does, before the step's first push.
func (o AttestOptions) Validate() error {
	if o.Keyless && (o.FulcioURL == "" || o.IDTokenPath == "") {
		return fmt.Errorf("--keyless needs --fulcio-url and --identity-token-path")
	}
	return nil
}

// Check fails when the step could not sign what it is about to push: no
// readable key, or keyless without a token path. Steps call it before any
// work, so a missing Secret never leaves an unattested push behind.
func (o AttestOptions) Check() error {
	if o.Keyless {
		if o.FulcioURL == "" || o.IDTokenPath == "" {
			return fmt.Errorf("--keyless needs --fulcio-url and --identity-token-path")
		}
		return nil
	}
	if _, err := os.Stat(o.KeyPath); err != nil {
		return fmt.Errorf("reading the cosign key (--key): %w", err)
	}
	return nil
}

// Input is what Sign needs to sign and attest image (repository@sha256:…)
// as built from in. The key is read here, from its mounted file, and
// never logged.
func (o AttestOptions) Input(image string, in trust.Inputs) (SignInput, error) {
	si := SignInput{Image: image, Inputs: in, RunID: o.RunID}
	if o.Keyless {
		si.Keyless = &KeylessOptions{FulcioURL: o.FulcioURL, RekorURL: o.RekorURL, IDTokenPath: o.IDTokenPath}
		return si, nil
	}
	key, err := os.ReadFile(o.KeyPath)
	if err != nil {
		return SignInput{}, fmt.Errorf("attesting %s: reading the cosign key (--key): %w", image, err)
	}
	si.Key, si.Password = key, o.Password()
	if o.PasswordFile != "" {
		switch pw, err := os.ReadFile(o.PasswordFile); {
		case err == nil:
			si.Password = bytes.TrimRight(pw, "\r\n")
		case !os.IsNotExist(err):
			return SignInput{}, fmt.Errorf("attesting %s: reading the key password file: %w", image, err)
		}
	}
	return si, nil
}
