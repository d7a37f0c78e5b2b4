// Package rollout rolls a verified image out to one MachineConfigPool
// through MCO's own API (the CoreOS layering enhancement and the KMM day-0
// proposal): it writes the osImageURL MachineConfig, follows the pool and
// its MachineConfigNodes
// (https://github.com/openshift/enhancements/blob/master/enhancements/machine-config/machine-config-node.md)
// by watches, relisting when a watch ends or expires and dropping a
// deleted node, until every node runs the image, and rolls back by itself
// on failure. Before any node may update, the drift gate (drift.go) checks
// that MCO rendered the config kiln predicted for the image.
package rollout
