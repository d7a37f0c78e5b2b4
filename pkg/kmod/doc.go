// Package kmod holds the ModuleDay0 logic: build arguments, the kmod image
// build, kernel-module signing and the MachineConfig to ModuleDay0 sync.
//
// It lands with issue #7; DESIGN §2 and §5 define its contract.
package kmod
