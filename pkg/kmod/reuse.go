package kmod

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Reuse is the outcome of checking whether a registry object may stand in
// for a build. Image is repository@sha256:… when something sits at the
// reference; Rejected says why it is not reused ("" when it is, or when
// nothing was there).
type Reuse struct {
	Image    string
	Digest   string
	Proven   bool
	Rejected string
	// Signed are the modules checked against the current certificate.
	Signed []string
}

// resolveInput names an input image (OS_AUTO, DTK_AUTO, an unsigned image)
// by digest: what sits at its tag now, read through the mirrors. The
// digest, not the tag, is what a build uses and what its inputs record, so
// the tag moving later changes nothing already decided.
func resolveInput(ctx context.Context, r registry.Remote, image string) (name.Digest, error) {
	return resolve(ctx, r, image, r.Head)
}

// resolveOwn names kiln's own target by digest, read from the registry
// kiln pushes it to (never a mirror).
func resolveOwn(ctx context.Context, r registry.Remote, image string) (name.Digest, error) {
	return resolve(ctx, r, image, r.HeadNamed)
}

func resolve(ctx context.Context, r registry.Remote, image string, head func(context.Context, name.Reference) (*v1.Descriptor, error)) (name.Digest, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return name.Digest{}, err
	}
	if d, ok := ref.(name.Digest); ok {
		return d, nil
	}
	desc, err := head(ctx, ref)
	if err != nil {
		return name.Digest{}, registry.Classify(err, "resolving", image)
	}
	return ref.Context().Digest(desc.Digest.String()), nil
}

// proveAt checks what sits at image (a tag) against want: it is reused only
// when it carries id's signature and an attestation from id binding
// exactly want (sign.Prove). Tags, labels and annotations play no part:
// anyone with push access can copy them. It makes no registry write.
func proveAt(ctx context.Context, r registry.Remote, image string, id trust.Identity, want trust.Inputs) (Reuse, error) {
	d, err := resolveOwn(ctx, r, image)
	if errors.Is(err, registry.ErrNotFound) {
		return Reuse{}, nil
	}
	if err != nil {
		return Reuse{}, err
	}
	u := Reuse{Image: d.String(), Digest: d.DigestStr()}
	switch err := sign.Prove(ctx, r, d, id, want); {
	case err == nil:
		u.Proven = true
	case errors.Is(err, trust.ErrNotProven):
		u.Rejected = fmt.Sprintf("%s holds %s with %v", image, d.DigestStr(), unwrapSubject(err, d))
	default:
		return Reuse{}, err
	}
	return u, nil
}

// unwrapSubject drops Prove's leading "repo@digest: " so the message reads
// "<ref> holds sha256:… with no kiln attestation for these inputs: why".
func unwrapSubject(err error, d name.Digest) string {
	return strings.TrimPrefix(err.Error(), d.String()+": ")
}

// reject logs why an object is not reused and records it for the
// REUSE_REJECTED result.
func (u *Reuse) reject(p *step.Progress, why string) {
	if why != "" {
		u.Rejected, u.Proven = why, false
	}
	if u.Rejected != "" {
		p.Printf("%s; not reused", u.Rejected)
	}
}
