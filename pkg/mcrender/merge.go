package mcrender

import (
	"fmt"
	"slices"
	"strings"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Kernel types MCO knows.
const (
	KernelDefault  = "default"
	KernelRealtime = "realtime"
	Kernel64kPages = "64k-pages"
)

// SupportedExtensions are the RHCOS extensions MCO accepts
// (ctrlcommon.SupportedExtensions).
var SupportedExtensions = []string{"two-node-ha", "ipsec", "usbguard", "kerberos", "kernel-devel", "sandboxed-containers", "sysstat"}

// Defaults are the payload's values for the fields an MC may override;
// an alias, as they are saved with the prediction's inputs
// (work.MCOInputs).
type Defaults = work.Defaults

// parsed is one input MC with its Ignition config converted to spec 3.5
// (and remote sources snapshotted). hasConfig is false when the MC carries
// no Ignition config at all.
type parsed struct {
	mc        *mcfgv1.MachineConfig
	cfg       ign35types.Config
	hasConfig bool
}

// merge folds the inputs into one spec the way MCO's MergeMachineConfigs
// does. The inputs are already in merge order.
func merge(in []parsed, d Defaults) (mcfgv1.MachineConfigSpec, ign35types.Config, error) {
	out := emptyConfig()
	if in[0].hasConfig {
		out = in[0].cfg
	}
	var children []ign35types.Config
	for _, p := range in[1:] {
		if p.hasConfig {
			children = append(children, p.cfg)
		}
	}
	out = fold(out, children)
	// MCO always overwrites files; spec 3 defaults to not overwriting, so
	// nodes scaled in later would differ without this.
	for i := range out.Storage.Files {
		if out.Storage.Files[i].Overwrite == nil {
			t := true
			out.Storage.Files[i].Overwrite = &t
		}
	}
	raw, err := marshalConfig(out)
	if err != nil {
		return mcfgv1.MachineConfigSpec{}, out, fmt.Errorf("encoding merged Ignition config: %w", err)
	}
	spec := mcfgv1.MachineConfigSpec{
		Config:          runtime.RawExtension{Raw: raw},
		KernelArguments: []string{},
		Extensions:      []string{},
		KernelType:      KernelDefault,
		OSImageURL:      d.OSImageURL,

		BaseOSExtensionsContainerImage: d.ExtensionsImage,
	}
	kernelFrom := ""
	for _, p := range in {
		s := p.mc.Spec
		spec.FIPS = spec.FIPS || s.FIPS
		if s.KernelType == KernelRealtime || s.KernelType == Kernel64kPages {
			spec.KernelType, kernelFrom = s.KernelType, p.mc.Name
		}
		spec.KernelArguments = append(spec.KernelArguments, s.KernelArguments...)
		spec.Extensions = append(spec.Extensions, s.Extensions...)
		// MCO's generated MCs never override the images; only users do.
		if p.mc.Annotations[GeneratedByAnnotation] != "" {
			continue
		}
		if s.OSImageURL != "" {
			spec.OSImageURL = s.OSImageURL
		}
		if s.BaseOSExtensionsContainerImage != "" {
			spec.BaseOSExtensionsContainerImage = s.BaseOSExtensionsContainerImage
		}
	}
	if spec.KernelType != KernelDefault {
		for _, p := range in {
			if slices.Contains(p.mc.Spec.Extensions, "kernel-devel") {
				return spec, out, fmt.Errorf("MachineConfig %q: spec.extensions: kernel-devel is not supported with kernelType %q (set by MachineConfig %q)", p.mc.Name, spec.KernelType, kernelFrom)
			}
		}
	}
	return spec, out, nil
}

// compressionToEmpty and compressionToNil are MCO's compression quirk
// around each merge (see mergeStep).
func compressionToEmpty(c *ign35types.Config) {
	for i := range c.Storage.Files {
		if c.Storage.Files[i].Contents.Compression == nil {
			empty := ""
			c.Storage.Files[i].Contents.Compression = &empty
		}
	}
}

func compressionToNil(c *ign35types.Config) {
	for i := range c.Storage.Files {
		if p := c.Storage.Files[i].Contents.Compression; p != nil && *p == "" {
			c.Storage.Files[i].Contents.Compression = nil
		}
	}
}

// validateSpec checks what MCO checks on each input before merging, plus
// the extension allowlist for every MC (MCO skips it for an MC without an
// Ignition config).
func validateSpec(mc *mcfgv1.MachineConfig) error {
	switch mc.Spec.KernelType {
	case "", KernelDefault, KernelRealtime, Kernel64kPages:
	default:
		return fmt.Errorf("MachineConfig %q: spec.kernelType %q is not supported: want %q, %q or %q", mc.Name, mc.Spec.KernelType, KernelDefault, KernelRealtime, Kernel64kPages)
	}
	if u := mc.Spec.OSImageURL; u != "" {
		// MCO passes it to rpm-ostree as a pull spec; kiln passes it on as
		// BASE_IMAGE, so it must at least be an image reference.
		if _, err := imageref.Parse(u); err != nil {
			return fmt.Errorf("MachineConfig %q: spec.osImageURL %q: not an image reference: %w", mc.Name, u, err)
		}
	}
	for i, ext := range mc.Spec.Extensions {
		if !slices.Contains(SupportedExtensions, ext) {
			return fmt.Errorf("MachineConfig %q: spec.extensions[%d]: %q is not a supported extension (supported: %s)", mc.Name, i, ext, strings.Join(SupportedExtensions, ", "))
		}
	}
	return nil
}
