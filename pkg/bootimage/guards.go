package bootimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/coreos/stream-metadata-go/arch"
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Skip reasons of the per-MachineSet guards, in the order they are checked.
const (
	ReasonOwned    = "has an ownerReference"
	ReasonOSStream = "osstream label is not " + SupportedOSStream
	ReasonWindows  = "Windows MachineSet"
	ReasonNoArch   = "no architecture annotation on a multi-arch cluster"
	// ReasonProviderKind: the providerSpec is another platform's.
	ReasonProviderKind = "providerSpec is for another platform"
)

// providerKinds are the providerSpec kinds of each supported platform's
// Machine API provider.
var providerKinds = map[configv1.PlatformType]string{
	configv1.AWSPlatformType:     "AWSMachineProviderConfig",
	configv1.GCPPlatformType:     "GCPMachineProviderSpec",
	configv1.AzurePlatformType:   "AzureMachineProviderSpec",
	configv1.VSpherePlatformType: "VSphereMachineProviderSpec",
}

// providerKindGuard skips a MachineSet whose providerSpec names another
// platform's kind: the updater would decode it leniently, find no boot
// image field of its own, and call it up to date. Such MachineSets only
// exist in manifests copied between clusters (or a GitOps folder shared by
// several), and their provider would never run them here; skipping with the
// reason says so. A providerSpec without kind is left to the updater.
func providerKindGuard(ms *machinev1beta1.MachineSet, platform configv1.PlatformType) string {
	want, ok := providerKinds[platform]
	v := ms.Spec.Template.Spec.ProviderSpec.Value
	if !ok || v == nil {
		return ""
	}
	var tm metav1.TypeMeta
	if json.Unmarshal(v.Raw, &tm) != nil || tm.Kind == "" || tm.Kind == want {
		return ""
	}
	return fmt.Sprintf("%s (kind %s; platform %s uses %s)", ReasonProviderKind, tm.Kind, platform, want)
}

// ownershipGuard skips MachineSets another controller owns (Hive,
// MachineDeployments, ArgoCD apps…): patching them would thrash. Like MCO,
// any ownerReference counts.
func ownershipGuard(ms metav1.Object) string {
	if refs := ms.GetOwnerReferences(); len(refs) > 0 {
		return fmt.Sprintf("%s (%s/%s)", ReasonOwned, refs[0].Kind, refs[0].Name)
	}
	return ""
}

// osGuardLabels skips MachineSets of another OS stream and Windows ones,
// from the MachineSet's and its machine template's labels (Machine API and
// Cluster API alike). A MachineSet without the stream label predates dual
// streams and is managed. MCO does not count these as skipped; kiln counts
// and reports every skip.
func osGuardLabels(setLabels, templateLabels map[string]string) string {
	if s, ok := setLabels[OSStreamLabel]; ok && s != SupportedOSStream {
		return fmt.Sprintf("%s (%q)", ReasonOSStream, s)
	}
	if templateLabels[OSIDLabel] == "Windows" {
		return ReasonWindows
	}
	return ""
}

// validArch are the Go architectures OpenShift ships boot images for.
var validArch = map[string]bool{"amd64": true, "arm64": true, "s390x": true, "ppc64le": true}

// archOf returns the stream (RPM) architecture of a MachineSet from the
// autoscaler's labels annotation. Without it, a single-arch cluster means
// defaultArch and a multi-arch cluster means skip (skip != "").
func archOf(ms metav1.Object, cv *configv1.ClusterVersion, defaultArch string) (rpmArch, skip string, err error) {
	v, ok := ms.GetAnnotations()[ArchAnnotation]
	if !ok {
		if cv != nil && cv.Status.Desired.Architecture == configv1.ClusterVersionArchitectureMulti {
			return "", ReasonNoArch, nil
		}
		return defaultArch, "", nil
	}
	for _, l := range strings.Split(v, ",") {
		if a, found := strings.CutPrefix(strings.TrimSpace(l), archLabelPrefix); found {
			if !validArch[a] {
				return "", "", fmt.Errorf("MachineSet %s/%s annotation %s: unknown architecture %q", ms.GetNamespace(), ms.GetName(), ArchAnnotation, a)
			}
			return arch.RpmArch(a), "", nil
		}
	}
	return "", "", fmt.Errorf("MachineSet %s/%s annotation %s: no %s label in %q", ms.GetNamespace(), ms.GetName(), ArchAnnotation, strings.TrimSuffix(archLabelPrefix, "="), v)
}

// hotLoop is the record kept in HotLoopAnnotation.
type hotLoop struct {
	Patch string `json:"patch"`
	Count int    `json:"count"`
}

// hotLoopCheck returns the annotation value to write with a patch whose
// target providerSpec is spec, or an error when the same patch was already
// applied HotLoopLimit times in a row (something keeps reverting it).
func hotLoopCheck(ms metav1.Object, spec []byte) (string, error) {
	sum := sha256.Sum256(spec)
	next := hotLoop{Patch: hex.EncodeToString(sum[:8]), Count: 1}
	if v, ok := ms.GetAnnotations()[HotLoopAnnotation]; ok {
		var prev hotLoop
		if json.Unmarshal([]byte(v), &prev) == nil && prev.Patch == next.Patch {
			if prev.Count >= HotLoopLimit {
				return "", fmt.Errorf("MachineSet %s/%s: the same boot image patch was applied %d times and reverted each time (hot loop); opt this MachineSet out, stop whatever reverts it, and remove annotation %s to resume",
					ms.GetNamespace(), ms.GetName(), prev.Count, HotLoopAnnotation)
			}
			next.Count = prev.Count + 1
		}
	}
	b, _ := json.Marshal(next)
	return string(b), nil
}
