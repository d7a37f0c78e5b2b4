// Package nodesim simulates an rpm-ostree node with real ostree (Debian's
// ostree 2022.7), so tests can check what a node ends up with after it
// imports and deploys an image:
//
//	n := nodesim.New(t, nodesim.Options{})
//	base, _ := nodesim.Base()
//	n.Deploy(base)                       // first install
//	n.EditEtc("/etc/motd", b, 0o644)     // Ignition / local edits
//	v, err := n.Upgrade(img)             // rebase + reboot into img
//	f, ok := v.File("/etc/motd")
//
// Each image's layers above the base go through kiln's emulation of
// ostree-ext's layer import (internal/importfilter: the path rules, etc -> usr/etc,
// dropped folders), are committed one by one with `ostree commit
// --tree=tar=`, merged over the base with `ostree checkout --union
// --whiteouts` and deployed with `ostree admin deploy`: the /etc three-way
// merge, the kept /var, the boot entry and its kernel are real ostree's.
// Device nodes, hard links out of the layer and whiteouts are whatever
// ostree makes of them.
//
// ostree runs in a helper (the test binary re-executed) inside a new user
// namespace with ids 0-65535 mapped to themselves and a new mount
// namespace, on a tmpfs mounted there; the helper refuses to run ostree
// anywhere else (isolation.go), because `ostree admin deploy` as real root
// freezes the filesystem holding the sysroot's /boot. Creating the
// namespaces needs root (or CAP_SYS_ADMIN and CAP_SETUID).
//
// Not simulated: SELinux labels, rpm-ostree's kernel arguments and
// initramfs regeneration, the bootloader and the boot itself.
package nodesim
