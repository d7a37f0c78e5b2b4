package bootimage

import (
	"fmt"
	"strings"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// Azure points image at the stream's marketplace image of the MachineSet's
// variant (unpaid "no purchase plan", or one of the paid OCP/OPP/OKE product
// lines and their EMEA twins) and Hyper-V generation.
//
// As in MCO: a gallery image uploaded at install (image.resourceID) moves to
// the unpaid marketplace image of the same generation; VMs with a security
// type (confidential or trusted launch) and ppc64le/s390x are skipped.
type Azure struct{}

type azureVariant struct {
	name string
	pick func(*AzureMarketplace) *AzureImages
	paid bool
}

var azureNoPlan = azureVariant{"no-purchase-plan", func(m *AzureMarketplace) *AzureImages { return m.NoPurchasePlan }, false}

// azurePaid maps publisher/offer to the paid product lines.
var azurePaid = map[[2]string]azureVariant{
	{"redhat", "rh-ocp-worker"}:         {"ocp", func(m *AzureMarketplace) *AzureImages { return m.OCP }, true},
	{"redhat", "rh-opp-worker"}:         {"opp", func(m *AzureMarketplace) *AzureImages { return m.OPP }, true},
	{"redhat", "rh-oke-worker"}:         {"oke", func(m *AzureMarketplace) *AzureImages { return m.OKE }, true},
	{"redhat-limited", "rh-ocp-worker"}: {"ocp-emea", func(m *AzureMarketplace) *AzureImages { return m.OCPEMEA }, true},
	{"redhat-limited", "rh-opp-worker"}: {"opp-emea", func(m *AzureMarketplace) *AzureImages { return m.OPPEMEA }, true},
	{"redhat-limited", "rh-oke-worker"}: {"oke-emea", func(m *AzureMarketplace) *AzureImages { return m.OKEEMEA }, true},
}

// Plan implements Updater.
func (Azure) Plan(in Input) (Plan, error) {
	name := in.MachineSet.Namespace + "/" + in.MachineSet.Name
	if in.Arch == "ppc64le" || in.Arch == "s390x" {
		return Plan{Skip: fmt.Sprintf("architecture %s is not supported on Azure", in.Arch)}, nil
	}
	spec := &machinev1beta1.AzureMachineProviderSpec{}
	ps, err := DecodeProviderSpec(in.MachineSet, spec)
	if err != nil {
		return Plan{}, err
	}
	if spec.SecurityProfile != nil && spec.SecurityProfile.Settings.SecurityType != "" {
		return Plan{Skip: fmt.Sprintf("securityType %s (confidential/trusted launch VMs are not updated)", spec.SecurityProfile.Settings.SecurityType)}, nil
	}
	cur := spec.Image
	gallery := cur.ResourceID != ""
	variant := azureNoPlan
	if !gallery && cur.Publisher != "azureopenshift" {
		v, ok := azurePaid[[2]string{cur.Publisher, cur.Offer}]
		if !ok {
			return Plan{}, fmt.Errorf("MachineSet %s providerSpec.value.image: publisher %q offer %q is no known marketplace variant", name, cur.Publisher, cur.Offer)
		}
		variant = v
	}
	// MCO (platform_helpers.go reconcileAzureProviderSpec) fails when the
	// stream lacks the architecture, as GCP and vSphere do here; only a
	// stream without Azure marketplace images is a skip.
	if _, err := in.Stream.Arch(in.Arch); err != nil {
		return Plan{}, fmt.Errorf("MachineSet %s: %w", name, err)
	}
	mp := in.Stream.Azure[in.Arch]
	if mp == nil {
		return Plan{Skip: fmt.Sprintf("stream %s has no Azure marketplace images", in.Stream.FormatPrefix(in.Arch))}, nil
	}
	set := variant.pick(mp)
	if set == nil {
		return Plan{}, fmt.Errorf("reading boot images: stream %s has no Azure %s images", in.Stream.FormatPrefix(in.Arch), variant.name)
	}
	// Generation: galleries say gen2 in the resource id; unpaid SKUs say v2
	// (arm64 is always gen2); paid SKUs say -gen1 for generation 1.
	var gen2 bool
	switch {
	case gallery:
		gen2 = strings.Contains(cur.ResourceID, "gen2")
	case cur.Type == machinev1beta1.AzureImageTypeMarketplaceNoPlan || cur.Publisher == "azureopenshift":
		gen2 = strings.Contains(cur.SKU, "v2") || in.Arch == "aarch64"
	default:
		gen2 = !strings.Contains(cur.SKU, "gen1")
	}
	img, gen := set.Gen1, "hyperVGen1"
	if gen2 {
		img, gen = set.Gen2, "hyperVGen2"
	}
	if img == nil {
		return Plan{}, fmt.Errorf("reading boot images: stream %s has no Azure %s %s image", in.Stream.FormatPrefix(in.Arch), variant.name, gen)
	}
	if field, value, err := checkAzureImage(img); err != nil {
		return Plan{}, imageIDError("MachineSet "+name, fmt.Sprintf("architectures.%s.rhel-coreos-extensions.marketplace.azure.%s.%s.%s", in.Arch, variant.name, gen, field), value, err)
	}
	target := machinev1beta1.Image{Publisher: img.Publisher, Offer: img.Offer, SKU: img.SKU, Version: img.Version,
		Type: machinev1beta1.AzureImageTypeMarketplaceNoPlan}
	if variant.paid {
		target.Type = machinev1beta1.AzureImageTypeMarketplaceWithPlan
	}
	plan := Plan{Spec: ps, Current: azureURN(cur), Target: azureURN(target), Release: img.Version}
	if spec.UserDataSecret != nil {
		plan.UserDataSecret = secretRef(in.MachineSet, spec.UserDataSecret.Namespace, spec.UserDataSecret.Name)
	}
	if cur == target {
		return plan, nil
	}
	plan.Edits = []Edit{{Path: []any{"image"}, Value: map[string]any{
		"publisher": target.Publisher, "offer": target.Offer, "sku": target.SKU, "version": target.Version,
		"resourceID": "", "type": string(target.Type),
	}}}
	return plan, nil
}

func azureURN(i machinev1beta1.Image) string {
	if i.ResourceID != "" {
		return i.ResourceID
	}
	return fmt.Sprintf("%s:%s:%s:%s", i.Publisher, i.Offer, i.SKU, i.Version)
}
