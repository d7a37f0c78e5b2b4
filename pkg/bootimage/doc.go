// Package bootimage updates MachineSets' boot images as MCO's boot-image
// controller does, plus Cluster API MachineSets and boot image history.
//
// It lands with issue #5; DESIGN §2 and §6 define its contract.
package bootimage
