// Package kmod holds kiln's day-0 kernel-module logic (the KMM day-0
// proposal,
// https://github.com/rh-ecosystem-edge/kernel-module-management/blob/main/docs/enhancements/0002_day0-integration.md):
// what a run builds or signs and why (Decide), the ModuleDay0 build
// arguments, the kmod image build, kernel-module signing with the modules
// placed where the booted kernel loads them (depmod run on the image's own
// kernel tree), the rebuild a cluster upgrade needs, and the MachineConfig
// ⇄ ModuleDay0 sync.
package kmod
