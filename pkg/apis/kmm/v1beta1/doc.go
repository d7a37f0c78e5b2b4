// Package v1beta1 holds the ModuleDay0 API of KMM's day-0 integration
// (the KMM day-0 proposal,
// https://github.com/rh-ecosystem-edge/kernel-module-management/blob/main/docs/enhancements/0002_day0-integration.md): one ModuleDay0 per MachineConfigPool names the OS image that
// carries the pool's day-0 kernel modules, and optionally how to build and
// sign it.
//
// +kubebuilder:object:generate=true
// +groupName=kmm.sigs.x-k8s.io
package v1beta1
