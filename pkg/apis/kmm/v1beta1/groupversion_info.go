// Package v1beta1 holds the ModuleDay0 API of KMM's day-0 integration
// (the KMM day-0 proposal,
// https://github.com/rh-ecosystem-edge/kernel-module-management/blob/main/docs/enhancements/0002_day0-integration.md): one ModuleDay0 per MachineConfigPool names the OS image that
// carries the pool's day-0 kernel modules, and optionally how to build and
// sign it.
//
// +kubebuilder:object:generate=true
// +groupName=kmm.sigs.x-k8s.io
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of ModuleDay0.
	GroupVersion = schema.GroupVersion{Group: "kmm.sigs.x-k8s.io", Version: "v1beta1"}

	// SchemeBuilder registers the types of this package.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
