package v1beta1

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/kiln-dev/kiln/pkg/imageref"
)

// KernelVersionVar is the one placeholder the KMM day-0 proposal allows in filesToSign.
const KernelVersionVar = "${KERNEL_FULL_VERSION}"

// FilesToSignField is the field path errors about filesToSign name.
const FilesToSignField = "spec.osMapping.sign.filesToSign"

// Validate checks a ModuleDay0 the way the CRD's schema does (MinItems=1
// and absolute entries for filesToSign), plus what the schema cannot say
// (one placeholder, valid globs). Cluster mode gets the schema from the
// apiserver and this check from render and kmod-sign; directory mode has
// no apiserver, so this check is all it gets: both modes run it, and a
// ModuleDay0 that reaches kmod-sign with nothing to sign is refused before
// anything is pushed.
func (m *ModuleDay0) Validate() error {
	if err := m.validateImages(); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", m.Namespace, m.Name, err)
	}
	sign := m.Spec.OSMapping.Sign
	if sign == nil {
		return nil
	}
	if err := ValidateFilesToSign(sign.FilesToSign); err != nil {
		return fmt.Errorf("ModuleDay0 %s/%s: %w", m.Namespace, m.Name, err)
	}
	return nil
}

// validateImages parses containerImage and sign.unsignedImage as image
// references and refuses an unsignedImage that names containerImage: the
// CRD's CEL rule compares the strings (with its message); two spellings of
// one reference ("quay.io/x" and "quay.io/x:latest") are refused too, as
// kmod-sign would otherwise overwrite the image it signs from.
func (m *ModuleDay0) validateImages() error {
	om := m.Spec.OSMapping
	target, err := imageref.Parse(om.ContainerImage)
	if err != nil {
		return fmt.Errorf("%s %q: %w", ContainerImageField, om.ContainerImage, err)
	}
	if om.Sign == nil || om.Sign.UnsignedImage == "" {
		return nil
	}
	if om.Sign.UnsignedImage == om.ContainerImage {
		return errors.New(`spec.osMapping: Invalid value: "object": sign.unsignedImage must differ from containerImage`)
	}
	unsigned, err := imageref.Parse(om.Sign.UnsignedImage)
	if err != nil {
		return fmt.Errorf("%s %q: %w", UnsignedImageField, om.Sign.UnsignedImage, err)
	}
	if unsigned.Name() == target.Name() {
		return fmt.Errorf("%s %q: names the same image as %s %q (%s)", UnsignedImageField, om.Sign.UnsignedImage, ContainerImageField, om.ContainerImage, target.Name())
	}
	return nil
}

// Field paths of the image references, for errors.
const (
	ContainerImageField = "spec.osMapping.containerImage"
	UnsignedImageField  = "spec.osMapping.sign.unsignedImage"
)

// ValidateFilesToSign checks the patterns alone (what they match is
// checked against the image by kmod-sign).
func ValidateFilesToSign(patterns []string) error {
	if len(patterns) == 0 {
		return fmt.Errorf("%s: empty: name at least one module to sign (a signed image with nothing signed would fail Secure Boot on the node)", FilesToSignField)
	}
	for i, p := range patterns {
		if err := validatePattern(p); err != nil {
			return fmt.Errorf("%s[%d] %q: %w", FilesToSignField, i, p, err)
		}
	}
	return nil
}

func validatePattern(p string) error {
	if !strings.HasPrefix(p, "/") {
		return errors.New("not an absolute path")
	}
	expanded := strings.ReplaceAll(p, KernelVersionVar, "v")
	if strings.Contains(expanded, "${") {
		return fmt.Errorf("only %s may be substituted", KernelVersionVar)
	}
	if _, err := path.Match(expanded, ""); err != nil {
		return err
	}
	return nil
}
