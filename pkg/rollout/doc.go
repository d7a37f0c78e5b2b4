// Package rollout rolls an image out to a pool through MCO's API and follows
// it through MachineConfigPool and MachineConfigNode status.
//
// It lands with issue #6; DESIGN §2 and §6 define its contract.
package rollout
