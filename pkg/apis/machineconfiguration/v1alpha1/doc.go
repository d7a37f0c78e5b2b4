// Package v1alpha1 holds kiln's BootImageHistory API (the boot image enhancement, "Tracking
// boot image history", https://github.com/openshift/enhancements/blob/master/enhancements/machine-config/manage-boot-images.md): one object per machine management resource, listing
// every boot image update kiln made to it.
//
// +kubebuilder:object:generate=true
// +groupName=machineconfiguration.openshift.io
package v1alpha1
