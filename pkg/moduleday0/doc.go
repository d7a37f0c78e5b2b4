// Package moduleday0 is the ModuleDay0 sync controller of the KMM day-0
// proposal
// (https://github.com/rh-ecosystem-edge/kernel-module-management/blob/main/docs/enhancements/0002_day0-integration.md):
// it keeps ModuleDay0 objects in step with kmm-managed MachineConfigs,
// marks conflicts and pools without a match, and points a pool's
// kmm-managed MachineConfig at a ModuleDay0's image once that image exists
// and the nodes do not run it.
//
// The trigger (pkg/trigger) registers it with its manager; it imports no
// stage package.
package moduleday0
