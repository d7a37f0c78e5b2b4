package sign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	slsa1 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	cremote "github.com/sigstore/cosign/v2/pkg/cosign/remote"
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/cosign/v2/pkg/oci/static"
	ctypes "github.com/sigstore/cosign/v2/pkg/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigpayload "github.com/sigstore/sigstore/pkg/signature/payload"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/sign/proof"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// SignInput says what to sign with which key.
type SignInput struct {
	// Image is repository@sha256:…; a tag is refused, a signature must
	// name exactly one manifest.
	Image string
	// Key is the PEM of a cosign private key (from a mounted Secret).
	Key      []byte
	Password []byte
	// Keyless selects Fulcio/Rekor instead of Key; see KeylessOptions.
	Keyless *KeylessOptions
	// Inputs are what the image was built from; the attestation records
	// them exactly (pkg/trust), so a later run can prove reuse by them.
	Inputs trust.Inputs
	// RunID is the PipelineRun or local run, recorded in runDetails.
	RunID string
	// Byproducts are recorded in runDetails.byproducts: the drift gate's
	// predicted rendered config (image-sign). They are not inputs, so
	// reuse does not depend on them.
	Byproducts []trust.Dependency
}

// KeylessOptions configure keyless (Fulcio + Rekor) signing.
type KeylessOptions struct {
	FulcioURL, RekorURL string
	// IDTokenPath is a file holding the OIDC token (a projected
	// ServiceAccount token in a pod).
	IDTokenPath string
}

// Sign signs the image and attaches an in-toto SLSA v1 provenance
// attestation, both in cosign's registry layout (sha256-<hex>.sig and
// .att tags), so `cosign verify --key` and `cosign verify-attestation
// --key` accept them. Nothing is uploaded to a transparency log.
func Sign(ctx context.Context, r registry.Remote, in SignInput) (*work.SignResult, error) {
	if err := in.Inputs.Validate(); err != nil {
		return nil, fmt.Errorf("attesting %s: %w", in.Image, err)
	}
	digest, err := parseDigest(r, in.Image)
	if err != nil {
		return nil, err
	}
	sv, kl, err := signerFor(in)
	if err != nil {
		return nil, err
	}
	ropts, err := r.Options(ctx)
	if err != nil {
		return nil, err
	}
	oopts := []ociremote.Option{ociremote.WithRemoteOptions(ropts...)}
	sig, err := signatureFor(ctx, digest, sv, kl)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", in.Image, err)
	}
	att, err := attestationFor(ctx, digest, sv, kl, in.Inputs, in.RunID, in.Byproducts)
	if err != nil {
		return nil, fmt.Errorf("attesting %s: %w", in.Image, err)
	}
	var certPEM []byte
	if kl != nil {
		certPEM = kl.cert
	}
	replace, err := newOwnReplace(slsa1.PredicateSLSAProvenance, sv, certPEM)
	if err != nil {
		return nil, fmt.Errorf("attesting %s: %w", in.Image, err)
	}
	if err := publish(digest, sv, replace, sig, att, oopts); err != nil {
		return nil, registry.Classify(err, "publishing the signature of", in.Image)
	}
	repo := digest.Context()
	res := &work.SignResult{}
	for _, x := range []struct {
		suffix string
		into   *string
	}{{ociremote.SignatureTagSuffix, &res.SignatureRef}, {ociremote.AttestationTagSuffix, &res.AttestationRef}} {
		tag := repo.Tag(strings.Replace(digest.DigestStr(), ":", "-", 1) + "." + x.suffix)
		// Read back from the registry just written, never a mirror.
		d, err := r.HeadNamed(ctx, tag)
		if err != nil {
			return nil, registry.Classify(err, "reading back", tag.String())
		}
		// cosign's tag, pinned by the manifest's digest: a bare
		// repository@sha256:… in the same repository reads as the image.
		*x.into = tag.String() + "@" + d.Digest.String()
	}
	return res, nil
}

// signatureFor signs the image's cosign payload.
func signatureFor(ctx context.Context, digest name.Digest, sv signature.SignerVerifier, kl *keylessSigner) (oci.Signature, error) {
	payload, err := (&sigpayload.Cosign{Image: digest}).MarshalJSON()
	if err != nil {
		return nil, err
	}
	raw, err := sv.SignMessage(bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	var opts []static.Option
	if kl != nil {
		if opts, err = kl.signatureOptions(ctx, payload, raw); err != nil {
			return nil, err
		}
	}
	return static.NewSignature(payload, base64.StdEncoding.EncodeToString(raw), opts...)
}

// attestationFor makes the DSSE-signed in-toto provenance attestation.
func attestationFor(ctx context.Context, digest name.Digest, sv signature.SignerVerifier, kl *keylessSigner, in trust.Inputs, runID string, byproducts []trust.Dependency) (oci.Signature, error) {
	stmt, err := trust.Statement(digest, in, runID, byproducts...)
	if err != nil {
		return nil, err
	}
	envelope, err := dsse.WrapSigner(sv, ctypes.IntotoPayloadType).SignMessage(bytes.NewReader(stmt))
	if err != nil {
		return nil, err
	}
	opts := []static.Option{
		static.WithLayerMediaType(ctypes.DssePayloadType),
		static.WithAnnotations(map[string]string{"predicateType": slsa1.PredicateSLSAProvenance}),
	}
	if kl != nil {
		more, err := kl.attestationOptions(ctx, envelope)
		if err != nil {
			return nil, err
		}
		opts = append(opts, more...)
	}
	return static.NewAttestation(envelope, opts...)
}

// publishAttempts bounds publish's retries.
const publishAttempts = 3

// publish attaches sig and att to what the registry holds now, writes the
// .sig and .att tags, and reads them back. cosign's layout is a
// read-modify-write with no lock, so another signer writing the same tags
// at that moment (Tekton Chains signs image-build's image as image-sign
// starts) can drop ours; a dropped one is attached again to the fresh
// state. Reading just before writing keeps the window in which we could
// drop theirs to one round trip.
func publish(digest name.Digest, sv signature.Verifier, ro mutate.ReplaceOp, sig, att oci.Signature, oopts []ociremote.Option) error {
	dd := cremote.NewDupeDetector(sv)
	// Like `cosign attest --replace`, but only for this identity's own
	// provenance (ownReplace): a new run's replaces the old one instead of
	// piling up, and another identity's stays verifiable.
	replace := mutate.WithReplaceOp(ro)
	// No wait between tries: each reads the registry's state afresh just
	// before writing, which is what another writer's race needs.
	b := wait.Backoff{Steps: publishAttempts}
	err := retry.OnError(b, func(err error) bool { return errors.Is(err, errReplaced) }, func() error {
		se, err := ociremote.SignedEntity(digest, oopts...)
		if err != nil {
			return err
		}
		// Layers over MaxAttachmentSize are dropped, unread: the node's
		// CRI-O refuses an image whose .sig holds one.
		if se, err = proof.Trim(se); err != nil {
			return err
		}
		if se, err = mutate.AttachSignatureToEntity(se, sig, mutate.WithDupeDetector(dd)); err != nil {
			return err
		}
		if se, err = mutate.AttachAttestationToEntity(se, att, mutate.WithDupeDetector(dd), replace); err != nil {
			return err
		}
		if err := ociremote.WriteSignatures(digest.Context(), se, oopts...); err != nil {
			return err
		}
		if err := ociremote.WriteAttestations(digest.Context(), se, oopts...); err != nil {
			return err
		}
		ok, err := published(digest, dd, sig, att, oopts)
		if err == nil && !ok {
			return errReplaced
		}
		return err
	})
	if errors.Is(err, errReplaced) {
		return fmt.Errorf("another writer replaced the .sig or .att tag %d times", publishAttempts)
	}
	return err
}

// errReplaced: what publish wrote was not there when read back.
var errReplaced = errors.New("the .sig or .att tag was replaced")

// published reports whether the registry's .sig holds sig (or an equal
// one from an earlier run, the dupe detector's test) and its .att holds att.
func published(digest name.Digest, dd mutate.DupeDetector, sig, att oci.Signature, oopts []ociremote.Option) (bool, error) {
	se, err := ociremote.SignedEntity(digest, oopts...)
	if err != nil {
		return false, err
	}
	sigs, err := se.Signatures()
	if err != nil {
		return false, err
	}
	atts, err := se.Attestations()
	if err != nil {
		return false, err
	}
	if found, err := dd.Find(sigs, sig); err != nil || found == nil {
		return false, err
	}
	// An attestation's signature is inside its DSSE envelope, which the
	// dupe detector does not open; the envelope (the layer) is ours alone.
	want, err := att.Digest()
	if err != nil {
		return false, err
	}
	list, err := atts.Get()
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(list, func(a oci.Signature) bool {
		d, err := a.Digest()
		return err == nil && d == want
	}), nil
}

// signerFor returns the key-based signer, or an ephemeral key certified by
// Fulcio for keyless signing.
func signerFor(in SignInput) (signature.SignerVerifier, *keylessSigner, error) {
	if in.Keyless == nil {
		sv, err := cosign.LoadPrivateKey(in.Key, in.Password, nil)
		if err != nil {
			// The cause says "decrypt" or "unsupported"; it never holds key bytes.
			return nil, nil, fmt.Errorf("signing %s: loading the cosign key: %w", in.Image, err)
		}
		return sv, nil, nil
	}
	if in.Keyless.FulcioURL == "" || in.Keyless.IDTokenPath == "" {
		return nil, nil, fmt.Errorf("signing %s: keyless needs a Fulcio URL and an identity token path", in.Image)
	}
	kl, err := newKeylessSigner(*in.Keyless)
	if err != nil {
		return nil, nil, fmt.Errorf("signing %s: %w", in.Image, err)
	}
	return kl, kl, nil
}

func parseDigest(r registry.Remote, image string) (name.Digest, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return name.Digest{}, err
	}
	d, ok := ref.(name.Digest)
	if !ok {
		return name.Digest{}, fmt.Errorf("signing %s: the image must be given by digest (repository@sha256:…), not by tag", image)
	}
	return d, nil
}

// maxPublicKeyBytes bounds a public key file: a PEM key is well under
// a kilobyte, a certificate bundle a few.
const maxPublicKeyBytes = 64 << 10

// LoadVerifier reads a cosign public key (PEM), a regular file of at most
// maxPublicKeyBytes.
func LoadVerifier(path string) (signature.Verifier, error) {
	b, truncated, err := safepath.ReadRegular(path, maxPublicKeyBytes)
	switch {
	case err != nil:
		return nil, fmt.Errorf("reading public key: %w", err)
	case truncated:
		return nil, fmt.Errorf("reading public key %s: over %d bytes", path, maxPublicKeyBytes)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("reading public key %s: %w", path, err)
	}
	return signature.LoadVerifier(pub, crypto.SHA256)
}

// CosignVerify runs cosign's own verification of the signature and the
// attestation with a public key, offline (no transparency log): the checks
// `cosign verify --key --insecure-ignore-tlog` and `cosign
// verify-attestation` make.
func CosignVerify(ctx context.Context, r registry.Remote, image string, v signature.Verifier) error {
	_, err := VerifiedStatements(ctx, r, image, v)
	return err
}

// VerifiedStatements makes CosignVerify's checks and returns the in-toto
// statements of the attestations that verified with v, for checks of what
// they claim (subjects, materials). Other signers' attestations on the same
// image, such as Tekton Chains' next to kiln's, are left out.
func VerifiedStatements(ctx context.Context, r registry.Remote, image string, v signature.Verifier) ([]intoto.Statement, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return nil, err
	}
	ropts, err := r.Options(ctx)
	if err != nil {
		return nil, err
	}
	co := &cosign.CheckOpts{
		RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(ropts...)},
		SigVerifier:        v, IgnoreTlog: true, IgnoreSCT: true,
		ClaimVerifier: cosign.SimpleClaimVerifier,
	}
	d, ok := ref.(name.Digest)
	if !ok {
		desc, err := r.Head(ctx, ref)
		if err != nil {
			return nil, registry.Classify(err, "resolving", image)
		}
		d = ref.Context().Digest(desc.Digest.String())
	}
	atts, err := proof.VerifyAttachments(ctx, d, co)
	if err != nil {
		return nil, fmt.Errorf("verifying the cosign signature and attestation of %s: %w", image, err)
	}
	var out []intoto.Statement
	for _, att := range atts {
		st, err := proof.StatementOf(att)
		if err != nil {
			return nil, fmt.Errorf("reading an attestation of %s: %w", image, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// StatementInputs maps the inputs a provenance statement records, URI to
// "alg:hex" digest: SLSA v0.2's materials (Tekton Chains' in-toto format)
// and SLSA v1's resolvedDependencies (kiln's own attestation, Chains'
// slsa/v2alpha* formats). Images are named oci://<repository>.
func StatementInputs(st intoto.Statement) map[string]string {
	b, err := json.Marshal(st.Predicate)
	if err != nil {
		return nil
	}
	type input struct {
		URI    string            `json:"uri"`
		Digest map[string]string `json:"digest"`
	}
	var p struct {
		Materials       []input `json:"materials"`
		BuildDefinition struct {
			ResolvedDependencies []input `json:"resolvedDependencies"`
		} `json:"buildDefinition"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return nil
	}
	out := map[string]string{}
	for _, in := range append(p.Materials, p.BuildDefinition.ResolvedDependencies...) {
		for alg, hex := range in.Digest {
			out[in.URI] = alg + ":" + hex
		}
	}
	return out
}
