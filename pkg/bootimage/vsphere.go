package bootimage

import (
	"fmt"
	"path"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// VSphere points template at the VM template of the stream's vmware
// release. kiln never imports OVAs (MCO does, through vCenter); the admin
// imports the OVA once per release (README.md) and kiln finds its name:
//
//   - from the mapping ConfigMap (--vsphere-templates), key = stream release,
//     value = template name or inventory path; else
//   - by the naming rule "<infrastructureName>-rhcos-<release>", in the folder
//     of the current template when that is an inventory path.
//
// Only templates kiln can recognise as RHCOS templates are replaced: names
// starting with "<infrastructureName>-rhcos" (the installer's and the
// naming rule's) or values of the mapping. Anything else is a custom
// template and the MachineSet is skipped.
type VSphere struct{}

// Plan implements Updater.
func (VSphere) Plan(in Input) (Plan, error) {
	spec := &machinev1beta1.VSphereMachineProviderSpec{}
	ps, err := DecodeProviderSpec(in.MachineSet, spec)
	if err != nil {
		return Plan{}, err
	}
	if in.Infra == nil || in.Infra.Spec.PlatformSpec.VSphere == nil {
		return Plan{Skip: reasonNoVSphereSpec, Current: spec.Template}, nil
	}
	arch, err := in.Stream.Arch(in.Arch)
	if err != nil {
		return Plan{}, err
	}
	release := arch.Artifacts["vmware"].Release
	if release == "" {
		return Plan{}, fmt.Errorf("reading boot images: stream %s has no vmware artifact release", in.Stream.FormatPrefix(in.Arch))
	}
	if err := checkVSphereWorkspace(in.MachineSet, spec.Workspace, in.Infra.Spec.PlatformSpec.VSphere); err != nil {
		return Plan{}, err
	}
	who := "MachineSet " + in.MachineSet.Namespace + "/" + in.MachineSet.Name
	if err := checkVSphereName(release); err != nil {
		return Plan{}, imageIDError(who, "architectures."+in.Arch+".artifacts.vmware.release", release, err)
	}
	infraName := in.Infra.Status.InfrastructureName
	target, mapped := in.VSphereTemplates[release]
	if !mapped {
		if infraName == "" {
			return Plan{}, fmt.Errorf("naming vSphere template: Infrastructure/cluster status.infrastructureName is empty and release %s has no mapping", release)
		}
		target = fmt.Sprintf("%s-rhcos-%s", infraName, release)
		if dir := path.Dir(spec.Template); strings.Contains(spec.Template, "/") && dir != "." {
			target = path.Join(dir, target)
		}
	}
	// The name comes from the mapping ConfigMap or from the naming rule
	// (infrastructureName, release); either way it is checked before it
	// is written.
	if err := checkVSphereTemplate(target); err != nil {
		return Plan{}, fmt.Errorf("%s: vSphere template %q for release %s: %w; not writing it (no patch)", who, target, release, err)
	}
	plan := Plan{Spec: ps, Current: spec.Template, Target: target, Release: release}
	if spec.UserDataSecret != nil {
		plan.UserDataSecret = secretRef(in.MachineSet, "", spec.UserDataSecret.Name)
	}
	if spec.Template == target {
		return plan, nil
	}
	if !recognisedTemplate(spec.Template, infraName, in.VSphereTemplates) {
		return Plan{Skip: fmt.Sprintf("custom template %q is not an RHCOS template kiln manages", spec.Template), Current: spec.Template}, nil
	}
	plan.Edits = []Edit{{Path: []any{"template"}, Value: target}}
	return plan, nil
}

func recognisedTemplate(tmpl, infraName string, mapping map[string]string) bool {
	if infraName != "" && strings.HasPrefix(path.Base(tmpl), infraName+"-rhcos") {
		return true
	}
	for _, v := range mapping {
		if v == tmpl {
			return true
		}
	}
	return false
}
