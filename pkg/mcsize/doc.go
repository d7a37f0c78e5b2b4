// Package mcsize measures a rendered MachineConfig the way MCO's render
// controller does before it stores one, so that render and image-build
// refuse exactly the configs MCO would: github.com/clarketm/json (which
// HTML-escapes and omits empty structs) of the whole MachineConfig as MCO
// builds it (pkg/controller/common/helpers.go ValidateMachineConfigSize,
// called by pkg/controller/render syncGeneratedMachineConfig on
// generateRenderedMachineConfig's object), against etcd's request size.
//
// Whitespace does not count: the JSON encoder compacts what a
// RawExtension holds, so a config read back from an indented file measures
// the same as the one render measured.
package mcsize
