// Package v1alpha1 holds kiln's BootImageHistory API (the boot image enhancement, "Tracking
// boot image history", https://github.com/openshift/enhancements/blob/master/enhancements/machine-config/manage-boot-images.md): one object per machine management resource, listing
// every boot image update kiln made to it.
//
// +kubebuilder:object:generate=true
// +groupName=machineconfiguration.openshift.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of BootImageHistory.
	GroupVersion = schema.GroupVersion{Group: "machineconfiguration.openshift.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
