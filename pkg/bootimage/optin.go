package bootimage

import (
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PlatformSupport says what the stage does on a platform.
type PlatformSupport struct {
	// Supported platforms have an Updater.
	Supported bool
	// DefaultOn platforms opt Machine API MachineSets in when the admin has
	// no opinion (the enhancement's "default-on" column).
	DefaultOn bool
}

// SupportFor returns the support of the cluster's platform. Like MCO,
// AzureStackCloud is unsupported: its boot images are fixed at install.
func SupportFor(infra *configv1.Infrastructure) PlatformSupport {
	switch platformOf(infra) {
	case configv1.AWSPlatformType, configv1.GCPPlatformType, configv1.VSpherePlatformType:
		return PlatformSupport{Supported: true, DefaultOn: true}
	case configv1.AzurePlatformType:
		if ps := infra.Status.PlatformStatus; ps != nil && ps.Azure != nil && ps.Azure.CloudName == configv1.AzureStackCloud {
			return PlatformSupport{}
		}
		return PlatformSupport{Supported: true, DefaultOn: true}
	}
	return PlatformSupport{}
}

// platformOf reads the platform from status (what the installer observed),
// falling back to spec for manifests that carry no status (local mode).
func platformOf(infra *configv1.Infrastructure) configv1.PlatformType {
	if infra == nil {
		return ""
	}
	if ps := infra.Status.PlatformStatus; ps != nil && ps.Type != "" {
		return ps.Type
	}
	if infra.Status.Platform != "" { //nolint:staticcheck // older installs only set this
		return infra.Status.Platform //nolint:staticcheck
	}
	return infra.Spec.PlatformSpec.Type
}

// EffectiveManagedBootImages computes status.managedBootImagesStatus from the
// admin's spec, the status already recorded and the platform default:
//   - an explicit empty machineManagers list is the legacy opt-out and is
//     reflected as is;
//   - an admin entry for Machine API MachineSets is reflected verbatim;
//   - otherwise that entry is All on a default-on release/platform, else None
//     (the enhancement's first two scenarios);
//
// and every other admin entry (other resources or API groups) is reflected
// too. MCO reflects only the Machine API (and CPMS) entries; the enhancement asks
// the status to mirror the configuration, so kiln mirrors all of it.
func EffectiveManagedBootImages(spec, prior operatorv1.ManagedBootImages, defaultOn bool) operatorv1.ManagedBootImages {
	if spec.MachineManagers != nil && len(spec.MachineManagers) == 0 {
		return operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{}}
	}
	mapi := operatorv1.MachineManager{Resource: operatorv1.MachineSets, APIGroup: operatorv1.MachineAPI,
		Selection: operatorv1.MachineManagerSelector{Mode: operatorv1.None}}
	if m, ok := findManager(spec.MachineManagers, operatorv1.MachineSets, operatorv1.MachineAPI); ok {
		mapi = m
	} else if defaultOn {
		mapi.Selection.Mode = operatorv1.All
	}
	out := operatorv1.ManagedBootImages{MachineManagers: []operatorv1.MachineManager{}}
	// Keep the order of what was recorded before so the status does not churn.
	seen := map[[2]string]bool{}
	add := func(m operatorv1.MachineManager) {
		k := [2]string{string(m.Resource), string(m.APIGroup)}
		if seen[k] {
			return
		}
		seen[k] = true
		out.MachineManagers = append(out.MachineManagers, *m.DeepCopy())
	}
	for _, p := range prior.MachineManagers {
		switch {
		case p.Resource == mapi.Resource && p.APIGroup == mapi.APIGroup:
			add(mapi)
		default:
			if m, ok := findManager(spec.MachineManagers, p.Resource, p.APIGroup); ok {
				add(m)
			}
		}
	}
	add(mapi)
	for _, m := range spec.MachineManagers {
		add(m)
	}
	return out
}

func findManager(ms []operatorv1.MachineManager, r operatorv1.MachineManagerMachineSetsResourceType, g operatorv1.MachineManagerMachineSetsAPIGroupType) (operatorv1.MachineManager, bool) {
	for _, m := range ms {
		if m.Resource == r && m.APIGroup == g {
			return m, true
		}
	}
	return operatorv1.MachineManager{}, false
}

// Enrollment returns the label selector of the MachineSets opted in for the
// given resource and API group, read from the effective status. No entry and
// mode None select nothing and return a nil selector: labels.Nothing() has
// no wire form (it would list everything), so callers must not send it.
func Enrollment(status operatorv1.ManagedBootImages, r operatorv1.MachineManagerMachineSetsResourceType, g operatorv1.MachineManagerMachineSetsAPIGroupType) (labels.Selector, error) {
	m, ok := findManager(status.MachineManagers, r, g)
	if !ok {
		return nil, nil
	}
	switch m.Selection.Mode {
	case operatorv1.All:
		return labels.Everything(), nil
	case operatorv1.None:
		return nil, nil
	case operatorv1.Partial:
		if m.Selection.Partial == nil || m.Selection.Partial.MachineResourceSelector == nil {
			return nil, fmt.Errorf("MachineConfiguration/cluster managedBootImages %s.%s: mode Partial without partial.machineResourceSelector", r, g)
		}
		sel, err := metav1.LabelSelectorAsSelector(m.Selection.Partial.MachineResourceSelector)
		if err != nil {
			return nil, fmt.Errorf("MachineConfiguration/cluster managedBootImages %s.%s: partial.machineResourceSelector: %w", r, g, err)
		}
		return sel, nil
	}
	return nil, fmt.Errorf("MachineConfiguration/cluster managedBootImages %s.%s: unknown selection mode %q", r, g, m.Selection.Mode)
}
