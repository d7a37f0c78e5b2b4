// Package bootimage is kiln's MachineSet boot image controller, after MCO's
// (https://github.com/openshift/machine-config-operator/tree/main/pkg/controller/machine-set-boot-image):
// it keeps the boot image reference in every opted-in Machine API
// MachineSet equal to the coreos-bootimages stream of the running release,
// and upgrades stub Ignition user-data to spec 3. Beyond MCO, it updates
// opted-in Cluster API MachineSets by cloning their GCP/AWS machine template
// (capi*.go). "The enhancement" in this package's comments is OpenShift's
// boot images enhancement
// (https://github.com/openshift/enhancements/blob/master/enhancements/machine-config/manage-boot-images.md).
//
// It follows MCO's pkg/controller/bootimage in behaviour, not in code. MCO
// runs it as a long-lived informer-driven controller; kiln runs it as a
// one-shot pipeline stage (kiln-steps bootimages), so state MCO keeps in
// memory (the hot-loop counter) lives in an annotation here. Every other
// difference is noted where it happens and listed in README.md.
//
// Tiers, in the manner of go-containerregistry: Updater (one small type per
// platform, pure functions of providerSpec + stream) → Reconciler (guards,
// patches, conditions, over a Cluster) → Options (the step's flags).
package bootimage
