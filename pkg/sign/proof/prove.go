package proof

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// CheckOpts are the checks for id: its public key, or its Fulcio roots
// with the exact certificate identity and issuer. The transparency log
// and SCT are not required, as with `cosign verify
// --insecure-ignore-tlog`: kiln's own registry signatures are the fact,
// and a cluster may have no Rekor.
func CheckOpts(ctx context.Context, r registry.Remote, id trust.Identity) (*Checks, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	// Registry options that cannot be built (an unreadable auth file)
	// fail here, before any verification, as cosign's options did.
	if _, err := r.Options(ctx); err != nil {
		return nil, err
	}
	c := &Checks{Remote: r}
	if !id.Keyless() {
		pub, err := cryptoutils.UnmarshalPEMToPublicKey(id.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("identity: reading the public key: %w", err)
		}
		if c.Key, err = signature.LoadVerifier(pub, crypto.SHA256); err != nil {
			return nil, fmt.Errorf("identity: %w", err)
		}
		return c, nil
	}
	var err error
	if c.Roots, err = id.RootPool(); err != nil {
		return nil, err
	}
	c.Subject, c.Issuer = id.Subject, id.Issuer
	return c, nil
}

// Statements verifies image's cosign signature and attestations with id
// and returns the statements of the attestations id signed. Other signers'
// attestations are left out. It only reads the registry.
func Statements(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity) ([]intoto.Statement, error) {
	co, err := CheckOpts(ctx, r, id)
	if err != nil {
		return nil, err
	}
	atts, err := VerifyAttachments(ctx, image, co)
	if err != nil {
		return nil, fmt.Errorf("verifying the signature and attestations of %s with %s: %w", image, id, err)
	}
	out := make([]intoto.Statement, 0, len(atts))
	for _, att := range atts {
		st, err := StatementOf(att)
		if err != nil {
			return nil, fmt.Errorf("reading an attestation of %s: %w", image, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// Prove checks that image is a fact for want: a valid signature from id
// over its digest, and an attestation from id that binds exactly want. It
// makes no registry write. A missing or foreign signature or attestation
// is an error wrapping trust.ErrNotProven whose message says why; an
// unreachable registry or refused credentials are other errors, so that a
// network fault never passes for "not proven" and triggers a rebuild that
// would fail the same way.
func Prove(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity, want trust.Inputs) error {
	return proveWith(image, id, want, func() ([]intoto.Statement, error) { return Statements(ctx, r, image, id) })
}

// proveWith is Prove over the statements that statements verifies; the
// side-by-side test gives it cosign's own verification.
func proveWith(image name.Digest, id trust.Identity, want trust.Inputs, statements func() ([]intoto.Statement, error)) error {
	if id.IsZero() {
		return fmt.Errorf("%s: %w: %w", image, trust.ErrNotProven, trust.ErrNoIdentity)
	}
	sts, err := statements()
	if err != nil {
		if cerr := registry.Classify(err, "reading signatures of", image.String()); errors.Is(cerr, registry.ErrAuth) || errors.Is(cerr, registry.ErrUnreachable) {
			return cerr
		}
		// A failing registry (5xx, throttling) answered nothing about the
		// image: that is a fault to report, not a missing proof.
		if code, ok := registry.HTTPStatus(err); ok && (code >= http.StatusInternalServerError || code == http.StatusTooManyRequests) {
			return fmt.Errorf("reading signatures of %s: %w (HTTP %d): %v", image, registry.ErrUnreachable, code, err)
		}
		return fmt.Errorf("%s: %w: %v", image, trust.ErrNotProven, err)
	}
	var last error = fmt.Errorf("%w: no attestation from %s", trust.ErrNotProven, id)
	for _, st := range sts {
		if last = trust.Binds(st, image, want); last == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %w", image, last)
}
