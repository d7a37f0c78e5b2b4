package sign

import (
	"github.com/sigstore/cosign/v2/pkg/oci"
	"github.com/sigstore/cosign/v2/pkg/oci/empty"
	"github.com/sigstore/cosign/v2/pkg/oci/mutate"
)

// within returns sigs without the layers over MaxAttachmentSize, judged
// by their descriptors (nothing is downloaded).
func within(sigs oci.Signatures) (oci.Signatures, error) {
	list, err := sigs.Get()
	if err != nil {
		return nil, err
	}
	var kept []oci.Signature
	skipped := false
	for _, s := range list {
		size, err := s.Size()
		if err != nil {
			return nil, err
		}
		if size > MaxAttachmentSize {
			skipped = true
			continue
		}
		kept = append(kept, s)
	}
	if !skipped {
		return sigs, nil
	}
	return mutate.AppendSignatures(empty.Signatures(), false, kept...)
}

// trimmed is a signed entity whose signatures and attestations are within
// MaxAttachmentSize: what image-sign writes back, so an artifact with a
// junk layer is repaired by the next signing.
type trimmed struct {
	oci.SignedEntity
	sigs, atts oci.Signatures
}

func (t trimmed) Signatures() (oci.Signatures, error)   { return t.sigs, nil }
func (t trimmed) Attestations() (oci.Signatures, error) { return t.atts, nil }

// trim returns se with its signatures and attestations within
// MaxAttachmentSize, for image-sign to write back.
func trim(se oci.SignedEntity) (oci.SignedEntity, error) {
	sigs, err := se.Signatures()
	if err != nil {
		return nil, err
	}
	atts, err := se.Attestations()
	if err != nil {
		return nil, err
	}
	t := trimmed{SignedEntity: se}
	if t.sigs, err = within(sigs); err != nil {
		return nil, err
	}
	if t.atts, err = within(atts); err != nil {
		return nil, err
	}
	return t, nil
}
