package sign

import (
	"context"
	"crypto"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// MaxAttachmentSize is proof.MaxAttachmentSize: the one limit on a
// layer of a signature or attestation artifact.
const MaxAttachmentSize = proof.MaxAttachmentSize

// CheckOpts are cosign's verification options for id, the checks
// proof.CheckOpts makes without cosign's library: its public key, or its
// Fulcio roots with the exact certificate identity and issuer, the
// transparency log and SCT not required (`cosign verify
// --insecure-ignore-tlog`). They are for verifying with cosign itself,
// as the proof's tests do to hold the two to the same answers.
func CheckOpts(ctx context.Context, r registry.Remote, id trust.Identity) (*cosign.CheckOpts, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	ropts, err := r.Options(ctx)
	if err != nil {
		return nil, err
	}
	co := &cosign.CheckOpts{
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(ropts...)},
		IgnoreTlog:         true, IgnoreSCT: true,
		ClaimVerifier: cosign.SimpleClaimVerifier,
	}
	if !id.Keyless() {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(id.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("identity: reading the public key: %w", err)
		}
		if co.SigVerifier, err = signature.LoadVerifier(pub, crypto.SHA256); err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
		return co, nil
	}
	if co.RootCerts, err = id.RootPool(); err != nil {
		return nil, err
	}
	co.Identities = []cosign.Identity{{Subject: id.Subject, Issuer: id.Issuer}}
	return co, nil
}

// Statements is proof.Statements: the verified statements id signed.
func Statements(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity) ([]intoto.Statement, error) {
	return proof.Statements(ctx, r, image, id)
}

// Prove is proof.Prove: image is a fact for want, signed and attested by
// id.
func Prove(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity, want trust.Inputs) error {
	return proof.Prove(ctx, r, image, id, want)
}
