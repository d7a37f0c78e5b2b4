package bootimage

import (
	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Input is what an Updater may look at: one MachineSet, its architecture,
// the stream, and the cluster's infrastructure.
type Input struct {
	MachineSet *machinev1beta1.MachineSet
	// Arch is the stream's (RPM) architecture name: x86_64, aarch64, …
	Arch   string
	Stream *Stream
	Infra  *configv1.Infrastructure
	// VSphereTemplates maps a stream release to a vSphere template name
	// (kiln's mapping ConfigMap); empty means the naming rule applies.
	VSphereTemplates map[string]string
}

// Plan is an Updater's decision for one MachineSet.
type Plan struct {
	// Edits change the boot image reference; none means up to date.
	Edits []Edit
	// Skip, when set, is why the MachineSet is left alone (counted, reported).
	Skip string
	// Current and Target name the boot image before and after, for the report.
	Current, Target string
	// Release is the RHCOS release of Target (BootImageHistory).
	Release string
	// UserDataSecret is the stub Ignition Secret the MachineSet boots with.
	UserDataSecret SecretRef
	// Spec is the decoded providerSpec the edits apply to.
	Spec *ProviderSpec
}

// SecretRef names a Secret.
type SecretRef struct{ Namespace, Name string }

// Updater decides a platform's boot image reference. Implementations are
// pure: they read the providerSpec and the stream and touch nothing else.
type Updater interface {
	Plan(in Input) (Plan, error)
}

// UpdaterFor returns the platform's Updater, or false when kiln cannot
// update boot images there (the README gives the manual procedure).
func UpdaterFor(p configv1.PlatformType) (Updater, bool) {
	switch p {
	case configv1.GCPPlatformType:
		return GCP{}, true
	case configv1.AWSPlatformType:
		return AWS{}, true
	case configv1.AzurePlatformType:
		return Azure{}, true
	case configv1.VSpherePlatformType:
		return VSphere{}, true
	}
	return nil, false
}

// ReasonPlatformNotSupported is the skip reason on every other platform.
const ReasonPlatformNotSupported = "platform not supported"

func secretRef(ms *machinev1beta1.MachineSet, ns, name string) SecretRef {
	if ns == "" {
		ns = ms.Namespace
	}
	return SecretRef{Namespace: ns, Name: name}
}
