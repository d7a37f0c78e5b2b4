package bootimage

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The stream ConfigMap is data, not code: before a value from it is
// written into a MachineSet (or an infrastructure template) it must have
// the shape the provider gives its image ids. A value of another shape is
// refused with the MachineSet, the stream field and the value named, and
// that MachineSet is not patched. Each pattern is compiled the first time
// it is matched: the bounded repetitions expand into large programs, and
// every kiln-steps subcommand would otherwise compile them at start.
var (
	// awsAMI: "ami-" and 8 (older) or 17 lowercase hex digits, as EC2
	// issues them.
	awsAMI = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`) })
	// gcpProject: a GCP project id, 6 to 30 lowercase letters, digits and
	// hyphens, starting with a letter and not ending with a hyphen.
	gcpProject = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][-a-z0-9]{4,28}[a-z0-9]$`) })
	// gcpName: an image name is an RFC 1035 label (1 to 63 characters).
	gcpName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`) })
	// azureID: marketplace publisher, offer and SKU ids are letters,
	// digits, '.', '_' and '-' (no ':', the URN separator, no '/' or space).
	azureID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`) })
	// azureVersion: a pinned marketplace version is Major.Minor.Build,
	// decimal numbers; "latest" is not a boot image anyone can pin.
	azureVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]{1,10}\.[0-9]{1,10}\.[0-9]{1,10}$`) })
)

// vsphereNameMax is vCenter's limit on an inventory object's name.
const vsphereNameMax = 80

// imageIDError names the MachineSet (or template), the stream field and
// the value that failed the check.
func imageIDError(who, field, value string, err error) error {
	return fmt.Errorf("%s: stream field %s %q: %w; not writing it (no patch)", who, field, value, err)
}

func checkAWSAMI(id string) error {
	if !awsAMI().MatchString(id) {
		return errors.New(`not an AMI id ("ami-" and 8 or 17 lowercase hex digits)`)
	}
	return nil
}

func checkGCPProject(p string) error {
	if !gcpProject().MatchString(p) {
		return errors.New("not a GCP project id (6-30 lowercase letters, digits, hyphens; starts with a letter)")
	}
	return nil
}

func checkGCPName(n string) error {
	if !gcpName().MatchString(n) {
		return errors.New("not a GCP image name (RFC 1035: 1-63 lowercase letters, digits, hyphens; starts with a letter)")
	}
	return nil
}

// checkAzureImage checks each marketplace field; the error names the field.
func checkAzureImage(img *AzureImage) (field, value string, err error) {
	for _, f := range []struct{ name, v string }{{"publisher", img.Publisher}, {"offer", img.Offer}, {"sku", img.SKU}} {
		if !azureID().MatchString(f.v) {
			return f.name, f.v, errors.New("not an Azure marketplace id (letters, digits, '.', '_', '-'; at most 64)")
		}
	}
	if !azureVersion().MatchString(img.Version) {
		return "version", img.Version, errors.New("not a pinned Azure image version (Major.Minor.Build)")
	}
	return "", "", nil
}

// checkVSphereName checks one inventory name: non-empty, at most 80
// characters, no path separator and no control character.
func checkVSphereName(n string) error {
	switch {
	case n == "":
		return errors.New("empty")
	case n == "." || n == "..":
		return errors.New("not a name")
	case len(n) > vsphereNameMax:
		return fmt.Errorf("longer than vCenter's %d characters", vsphereNameMax)
	case strings.ContainsAny(n, `/\`):
		return errors.New("contains a path separator")
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return errors.New("contains a control character")
	}
	return nil
}

// checkVSphereTemplate checks a template reference: a name, or an
// inventory path whose every element is a valid name.
func checkVSphereTemplate(t string) error {
	if strings.IndexFunc(t, unicode.IsControl) >= 0 {
		return errors.New("contains a control character")
	}
	if !strings.Contains(t, "/") {
		return checkVSphereName(t)
	}
	if path.Clean(t) != t {
		return errors.New("not a clean inventory path")
	}
	for _, el := range strings.Split(strings.TrimPrefix(t, "/"), "/") {
		if err := checkVSphereName(el); err != nil {
			return fmt.Errorf("inventory path element %q: %w", el, err)
		}
	}
	return nil
}

func templateName(t *unstructured.Unstructured) string {
	return t.GetKind() + " " + t.GetNamespace() + "/" + t.GetName()
}
