package v1beta1

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// UnsignedImage is the image whose modules kmod-sign signs: the
// sign.unsignedImage the mapping gives, else the one DefaultUnsignedImage
// names after containerImage. "" when the mapping has no sign section.
func (om OSMapping) UnsignedImage() (string, error) {
	switch {
	case om.Sign == nil:
		return "", nil
	case om.Sign.UnsignedImage != "":
		return om.Sign.UnsignedImage, nil
	}
	return DefaultUnsignedImage(om.ContainerImage)
}

// DefaultUnsignedImage names the unsigned image after containerImage
// (KMM's convention): its repository, with "-unsigned" after its tag, or
// the tag "unsigned" when it has none. A digest is dropped: the build
// pushes by tag, and the signed image's digest is not known before it is
// made.
func DefaultUnsignedImage(containerImage string) (string, error) {
	if _, err := name.ParseReference(containerImage); err != nil {
		return "", fmt.Errorf("%s %q: %w", ContainerImageField, containerImage, err)
	}
	base, _, _ := strings.Cut(containerImage, "@") // the digest, validated above
	tagged, err := name.NewTag(base, name.WithDefaultTag(""))
	if err != nil {
		return "", fmt.Errorf("%s %q: %w", ContainerImageField, containerImage, err)
	}
	tag := "unsigned"
	if t := tagged.TagStr(); t != "" {
		tag = t + "-unsigned"
	}
	out, err := name.NewTag(tagged.Context().Name() + ":" + tag)
	if err != nil {
		return "", fmt.Errorf("%s %q: making the unsigned image's tag: %w", ContainerImageField, containerImage, err)
	}
	return out.String(), nil
}
