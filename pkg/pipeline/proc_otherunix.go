//go:build unix && !linux

package pipeline

import "syscall"

// setParentDeathSignal: only Linux has a parent-death signal; elsewhere
// the watchdog alone stops a dead executor's steps.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// groupHasLiveMember: without /proc, a group that takes signals is alive.
func groupHasLiveMember(int) bool { return true }
