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
	target, release, err := gcpImage(in.Stream, in.Arch, "MachineSet "+in.MachineSet.Namespace+"/"+in.MachineSet.Name)
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Spec: ps, Target: target, Release: release}
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

// gcpImage returns the stream's GCP image reference and its release, in
// the form MCO and the installer write: projects/<project>/global/images/
// <name>, both parts checked first (who names the object for errors).
func gcpImage(s *Stream, rpmArch, who string) (target, release string, err error) {
	arch, err := s.Arch(rpmArch)
	if err != nil {
		return "", "", err
	}
	img := arch.Images.Gcp
	if img == nil || img.Project == "" || img.Name == "" {
		return "", "", fmt.Errorf("reading boot images: stream %s has no GCP image (project and name)", s.FormatPrefix(rpmArch))
	}
	field := "architectures." + rpmArch + ".images.gcp."
	if err := checkGCPProject(img.Project); err != nil {
		return "", "", imageIDError(who, field+"project", img.Project, err)
	}
	if err := checkGCPName(img.Name); err != nil {
		return "", "", imageIDError(who, field+"name", img.Name, err)
	}
	return fmt.Sprintf("projects/%s/global/images/%s", img.Project, img.Name), img.Release, nil
}

// PlanTemplate implements TemplateUpdater for CAPG's GCPMachineTemplate:
// spec.template.spec.image, the boot disk's image. A template without it
// (imageFamily or CAPG's default lookup) and custom images are skipped, as
// for Machine API.
func (GCP) PlanTemplate(in TemplateInput) (Plan, error) {
	spec, err := templateSpec(in.Template)
	if err != nil {
		return Plan{}, err
	}
	cur, err := templateString(in.Template, spec, "image")
	if err != nil {
		return Plan{}, err
	}
	if cur == "" {
		return Plan{Skip: "image not set (imageFamily or provider default)"}, nil
	}
	target, release, err := gcpImage(in.Stream, in.Arch, templateName(in.Template))
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Current: cur, Target: target, Release: release}
	if cur == target {
		return plan, nil
	}
	if !strings.HasPrefix(cur, gcpRHCOSPrefix) {
		return Plan{Skip: fmt.Sprintf("custom boot image %q is not under %s", cur, gcpRHCOSPrefix), Current: cur}, nil
	}
	plan.Edits = []Edit{{Path: []any{"image"}, Value: target}}
	return plan, nil
}
