package bootimage

import (
	"fmt"
	"path"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// reasonNoVSphereSpec: MCO leaves a vSphere MachineSet alone when the
// Infrastructure has no platformSpec.vsphere
// (pkg/controller/bootimage/platform_helpers.go
// reconcileVSphereProviderSpec); without it no vCenter vouches for the
// template kiln would name.
const reasonNoVSphereSpec = "Infrastructure/cluster has no spec.platformSpec.vsphere: no vCenter to check the workspace against"

// checkVSphereWorkspace refuses a MachineSet whose workspace lies in none
// of the Infrastructure's vCenters and failure domains, by MCO's rule
// (pkg/controller/bootimage/vsphere_helpers.go createNewVMTemplate, which
// follows the control plane machine set operator): a vCenter whose server
// is workspace.server, and a failure domain of that server with the
// workspace's datacenter, datastore, vmGroup (of a host-group zone
// affinity, else none) and resource pool (compared after path.Clean).
// The error names the workspace as MCO's does. MCO dereferences a missing
// workspace; kiln reports it.
func checkVSphereWorkspace(ms *machinev1beta1.MachineSet, ws *machinev1beta1.Workspace, vs *configv1.VSpherePlatformSpec) error {
	name := ms.Namespace + "/" + ms.Name
	if ws == nil {
		return fmt.Errorf("MachineSet %s spec.template.spec.providerSpec.value.workspace: not set", name)
	}
	for _, vc := range vs.VCenters {
		if vc.Server != ws.Server {
			continue
		}
		for _, fd := range vs.FailureDomains {
			if workspaceInFailureDomain(ws, vc.Server, fd) {
				return nil
			}
		}
	}
	details := fmt.Sprintf("server: %s, datacenter: %s, datastore: %s, resourcePool: %s", ws.Server, ws.Datacenter, ws.Datastore, ws.ResourcePool)
	if ws.VMGroup != "" {
		details += ", vmGroup: " + ws.VMGroup
	}
	return fmt.Errorf("MachineSet %s spec.template.spec.providerSpec.value.workspace (%s) does not match any vCenter/failure domain in Infrastructure/cluster spec.platformSpec.vsphere", name, details)
}

func workspaceInFailureDomain(ws *machinev1beta1.Workspace, server string, fd configv1.VSpherePlatformFailureDomainSpec) bool {
	vmGroup := ""
	if za := fd.ZoneAffinity; za != nil && za.HostGroup != nil {
		vmGroup = za.HostGroup.VMGroup
	}
	return fd.Server == server &&
		ws.Datacenter == fd.Topology.Datacenter &&
		ws.Datastore == fd.Topology.Datastore &&
		ws.VMGroup == vmGroup &&
		path.Clean(ws.ResourcePool) == path.Clean(fd.Topology.ResourcePool)
}
