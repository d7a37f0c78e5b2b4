// Package render renders a pool's MachineConfigs exactly as the Machine
// Config Operator does: selection, ordering, Ignition merge, spec-2
// conversion, remote-source snapshots, validation and the MCO-identical
// rendered name.
//
// It lands with issue #3; DESIGN §2 and §4 define its contract.
package render
