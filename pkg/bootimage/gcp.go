package bootimage

import (
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// GCP points boot disks at projects/<project>/global/images/<name> from the
// stream, the form the installer writes. Non-boot disks are never touched,
// and a boot disk whose image is not under projects/rhcos-cloud is a custom
// image: the MachineSet is skipped, as MCO does.
type GCP struct{}

const gcpRHCOSPrefix = "projects/rhcos-cloud/global/images"

// Plan implements Updater.
func (GCP) Plan(in Input) (Plan, error) {
	spec := &machinev1beta1.GCPMachineProviderSpec{}
	ps, err := DecodeProviderSpec(in.MachineSet, spec)
	if err != nil {
		return Plan{}, err
	}
	arch, err := in.Stream.Arch(in.Arch)
	if err != nil {
		return Plan{}, err
	}
	img := arch.Images.Gcp
	if img == nil || img.Project == "" || img.Name == "" {
		return Plan{}, fmt.Errorf("reading boot images: stream %s has no GCP image (project and name)", in.Stream.FormatPrefix(in.Arch))
	}
	target := fmt.Sprintf("projects/%s/global/images/%s", img.Project, img.Name)
	plan := Plan{Spec: ps, Target: target, Release: img.Release}
	if spec.UserDataSecret != nil {
		plan.UserDataSecret = secretRef(in.MachineSet, "", spec.UserDataSecret.Name)
	}
	for i, d := range spec.Disks {
		if d == nil || !d.Boot {
			continue
		}
		plan.Current = d.Image
		if d.Image == target {
			continue
		}
		if !strings.HasPrefix(d.Image, gcpRHCOSPrefix) {
			return Plan{Skip: fmt.Sprintf("custom boot image %q is not under %s", d.Image, gcpRHCOSPrefix), Current: d.Image}, nil
		}
		plan.Edits = append(plan.Edits, Edit{Path: []any{"disks", i, "image"}, Value: target})
	}
	return plan, nil
}
