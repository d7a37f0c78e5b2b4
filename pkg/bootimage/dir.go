package bootimage

import (
	"fmt"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
	"github.com/kiln-dev/kiln/pkg/kube"
)

// folder is the stage's folder of manifests (local/GitOps mode) as a
// kube.Source: reads come from root; every write goes to output as the
// full changed object, one file each, so the output folder is the GitOps
// change. Cluster API and provider objects are kept; other kinds the
// scheme does not know are ignored.
func folder(root, output string) *kube.Folder {
	return &kube.Folder{
		Dir: root, Output: output, Path: outputPath,
		Groups: []string{CAPIGroup, InfraGroup},
		// A folder without Cluster API objects lists none, as a cluster
		// serving the API with none would.
		Kinds: []schema.GroupVersionKind{
			{Group: CAPIGroup, Version: "v1beta2", Kind: "MachineSet"},
			{Group: CAPIGroup, Version: "v1beta2", Kind: "MachineDeployment"},
		},
		StatusSubresource: []client.Object{&operatorv1.MachineConfiguration{}},
	}
}

// LoadDir reads the manifests under root the way every stage does
// (pkg/manifests) into a Cluster whose writes go to output.
func LoadDir(root, output string) (Cluster, error) {
	c, err := kube.New(kube.Source{Folder: folder(root, output)})
	if err != nil {
		return nil, err
	}
	return Kube{Client: c}, nil
}

// outputPath names the GitOps file of each object the stage writes:
// machinesets/, secrets/ and bootimagehistories/ hold <namespace>_<name>,
// the MachineConfiguration is machineconfiguration_<name> at the top, and
// Cluster API objects are capi/<Kind>_<namespace>_<name>, deletions under
// capi/deleted/.
func outputPath(gvk schema.GroupVersionKind, ns, name string, deleted bool) (string, string, error) {
	if gvk.Group == CAPIGroup || gvk.Group == InfraGroup {
		sub := "capi"
		if deleted {
			sub = "capi/deleted"
		}
		return sub, gvk.Kind + "_" + ns + "_" + name, nil
	}
	if !deleted {
		switch gvk.GroupKind() {
		case schema.GroupKind{Group: machinev1beta1.GroupName, Kind: "MachineSet"}:
			return "machinesets", ns + "_" + name, nil
		case schema.GroupKind{Kind: "Secret"}:
			return "secrets", ns + "_" + name, nil
		case schema.GroupKind{Group: operatorv1.GroupName, Kind: "MachineConfiguration"}:
			return "", "machineconfiguration_" + name, nil
		case mcfgv1alpha1.GroupVersion.WithKind("BootImageHistory").GroupKind():
			return "bootimagehistories", ns + "_" + name, nil
		}
	}
	return "", "", fmt.Errorf("writing %s %s/%s: the boot image stage writes no such object to a folder", gvk.Kind, ns, name)
}
