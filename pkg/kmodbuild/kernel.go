package kmodbuild

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/layers"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// The kernelType values of a rendered MachineConfig (MCO's names).
const (
	KernelTypeDefault  = "default"
	KernelTypeRealtime = "realtime"
	KernelType64kPages = "64k-pages"
)

// DTKReleaseFile is where OpenShift's driver toolkit records the kernels
// it carries headers for
// (https://github.com/openshift/driver-toolkit/blob/master/Dockerfile).
const DTKReleaseFile = "etc/driver-toolkit-release.json"

// dtkReleaseLimit caps the read of DTKReleaseFile (a few dozen bytes).
const dtkReleaseLimit = 64 << 10

// DTKRelease is DTKReleaseFile's content.
type DTKRelease struct {
	KernelVersion   string `json:"KERNEL_VERSION"`
	RTKernelVersion string `json:"RT_KERNEL_VERSION,omitempty"`
}

// Kernels are the kernels a payload offers, by kernelType.
type Kernels map[string]string

// PayloadKernels are the kernels of the payload's OS image (osKernel, its
// ostree.linux label) and, from the same build of the same kernel
// sources, its realtime and 64k-pages variants. The variants are RHEL 9's
// kernel-rt and kernel-64k, which share the default kernel's version and
// release and add "+rt" / "+64k" to its uname; the driver toolkit's
// release file, when the build uses one, names the realtime kernel and
// wins, and must agree with the OS image on the default kernel (the
// toolkit of another release builds modules the node will not load).
func PayloadKernels(osKernel string, dtk *DTKRelease) (Kernels, error) {
	k := Kernels{
		KernelTypeDefault:  osKernel,
		KernelTypeRealtime: osKernel + "+rt",
		KernelType64kPages: osKernel + "+64k",
	}
	if dtk == nil {
		return k, nil
	}
	if dtk.KernelVersion != osKernel {
		return nil, fmt.Errorf("the driver toolkit's /%s names kernel %q, the OS image boots %s: they are not from the same release", DTKReleaseFile, dtk.KernelVersion, osKernel)
	}
	if dtk.RTKernelVersion != "" {
		k[KernelTypeRealtime] = dtk.RTKernelVersion
	}
	return k, nil
}

// For returns the kernel a pool of kernelType boots ("" is MCO's default).
func (k Kernels) For(kernelType string) (string, error) {
	if kernelType == "" {
		kernelType = KernelTypeDefault
	}
	v, ok := k[kernelType]
	if !ok {
		return "", fmt.Errorf("spec.kernelType %q: want %s, %s or %s", kernelType, KernelTypeDefault, KernelTypeRealtime, KernelType64kPages)
	}
	return v, nil
}

// Has reports whether v is one of the kernels.
func (k Kernels) Has(v string) bool {
	for _, kv := range k {
		if kv == v {
			return true
		}
	}
	return false
}

// readDTKRelease reads the driver toolkit's release file; nil when the
// image has none (an older toolkit, or a stand-in).
func readDTKRelease(ctx context.Context, r registry.Remote, image string) (*DTKRelease, error) {
	if image == "" {
		return nil, nil
	}
	ref, err := r.ParseRef(image)
	if err != nil {
		return nil, err
	}
	img, err := r.Image(ctx, ref)
	if err != nil {
		return nil, registry.Classify(err, "reading driver toolkit", image)
	}
	b, err := payload.ReadImageFileLimit(img, DTKReleaseFile, dtkReleaseLimit)
	if errors.Is(err, payload.ErrNotInImage) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading /%s of driver toolkit %s: %w", DTKReleaseFile, image, err)
	}
	rel := &DTKRelease{}
	if err := json.Unmarshal(b, rel); err != nil {
		return nil, fmt.Errorf("decoding /%s of driver toolkit %s: %w", DTKReleaseFile, image, err)
	}
	return rel, nil
}

// ReadPayloadKernels reads the OS image's kernel and the driver toolkit's
// release file (dtkImage may be empty) into PayloadKernels.
func ReadPayloadKernels(ctx context.Context, r registry.Remote, osImage, dtkImage string) (Kernels, error) {
	kver, err := osKernel(ctx, r, osImage)
	if err != nil {
		return nil, fmt.Errorf("reading the kernel version of OS_AUTO: %w", err)
	}
	dtk, err := readDTKRelease(ctx, r, dtkImage)
	if err != nil {
		return nil, err
	}
	return PayloadKernels(kver, dtk)
}

func osKernel(ctx context.Context, r registry.Remote, image string) (string, error) {
	ref, err := r.ParseRef(image)
	if err != nil {
		return "", err
	}
	img, err := r.Image(ctx, ref)
	if err != nil {
		return "", registry.Classify(err, "reading OS image", image)
	}
	return KernelFullVersion(img)
}

// OSTreeLinuxLabel is the label RHCOS images carry with their kernel's
// full version.
const OSTreeLinuxLabel = "ostree.linux"

// KernelFullVersion reads the kernel version of an OS image: the
// ostree.linux label RHCOS sets, else the only folder under
// /usr/lib/modules.
func KernelFullVersion(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	if v := cf.Config.Labels[OSTreeLinuxLabel]; v != "" {
		return v, nil
	}
	var versions []string
	err = layers.Walk(img, func(p string, h *tar.Header, _ io.Reader) error {
		if rest, ok := strings.CutPrefix(p, "usr/lib/modules/"); ok && rest != "" && !strings.Contains(rest, "/") && h.Typeflag == tar.TypeDir {
			versions = append(versions, rest)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(versions)
	versions = slices.Compact(versions)
	if len(versions) != 1 {
		return "", fmt.Errorf("cannot tell the kernel version: no %s label and %d folders under /usr/lib/modules %v", OSTreeLinuxLabel, len(versions), versions)
	}
	return versions[0], nil
}
