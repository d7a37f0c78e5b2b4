package nodesim

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// The helper refuses to run ostree unless it can prove it cannot touch the
// host: `ostree admin deploy` run as real root freezes and thaws the whole
// filesystem that holds the sysroot's /boot (FIFREEZE), which on a test
// machine is the host's disk. Inside a user namespace the freeze needs
// CAP_SYS_ADMIN in the initial namespace and is refused; on a tmpfs it has
// nothing to freeze; in a mount namespace of its own the tmpfs is gone when
// the helper exits. All three must hold.

// procUserInitIno is the inode number the kernel gives the initial user
// namespace (PROC_USER_INIT_INO in include/linux/proc_ns.h); every other
// user namespace gets a different one.
const procUserInitIno = 0xEFFFFFFD

// nsGetUserns is the NS_GET_USERNS ioctl (_IO(0xb7, 0x1), see ioctl_ns(2)):
// on a namespace file it returns a file descriptor for the user namespace
// that owns it.
const nsGetUserns = 0xb701

// checkUserns fails unless this process is in a user namespace other than
// the initial one.
func checkUserns() error {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/user", &st); err != nil {
		return fmt.Errorf("reading /proc/self/ns/user: %w", err)
	}
	if st.Ino == procUserInitIno {
		return errors.New("refusing to run ostree: this process is in the initial user namespace (ostree admin deploy would freeze the host's filesystem); run it through nodesim.New")
	}
	return nil
}

// checkMountns fails unless this process's mount namespace was created
// inside its own user namespace and differs from PID 1's where that is
// readable. With checkUserns (a non-initial user namespace) it proves the
// mount namespace is not the host's; alone, on the host, it proves nothing.
func checkMountns() error {
	f, err := os.Open("/proc/self/ns/mnt")
	if err != nil {
		return fmt.Errorf("reading /proc/self/ns/mnt: %w", err)
	}
	defer f.Close()
	owner, err := unix.IoctlRetInt(int(f.Fd()), nsGetUserns)
	if errors.Is(err, unix.EPERM) {
		// The kernel refuses when the owner is outside this user
		// namespace: the mount namespace was made before it (the host's).
		return errors.New("refusing to run ostree: this process shares a mount namespace it did not create (the host's); run it through nodesim.New")
	}
	if err != nil {
		return fmt.Errorf("asking the kernel which user namespace owns this mount namespace: %w", err)
	}
	defer unix.Close(owner)
	var ownerSt, selfSt, mntSt unix.Stat_t
	if err := unix.Fstat(owner, &ownerSt); err != nil {
		return fmt.Errorf("reading the mount namespace's owner: %w", err)
	}
	if err := unix.Stat("/proc/self/ns/user", &selfSt); err != nil {
		return fmt.Errorf("reading /proc/self/ns/user: %w", err)
	}
	if ownerSt.Ino != selfSt.Ino || ownerSt.Dev != selfSt.Dev {
		return errors.New("refusing to run ostree: this process shares a mount namespace it did not create (the host's); run it through nodesim.New")
	}
	if err := unix.Fstat(int(f.Fd()), &mntSt); err != nil {
		return fmt.Errorf("reading /proc/self/ns/mnt: %w", err)
	}
	var initSt unix.Stat_t
	// PID 1's namespace is unreadable from inside a user namespace
	// (ptrace rules); it is only compared when it can be read.
	if unix.Stat("/proc/1/ns/mnt", &initSt) == nil && initSt.Ino == mntSt.Ino && initSt.Dev == mntSt.Dev {
		return errors.New("refusing to run ostree: this process is in PID 1's mount namespace")
	}
	return nil
}

// checkTmpfs fails unless dir is a tmpfs.
func checkTmpfs(dir string) error {
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return fmt.Errorf("reading the filesystem of sysroot %s: %w", dir, err)
	}
	if fs.Type != unix.TMPFS_MAGIC {
		return fmt.Errorf("refusing to run ostree: sysroot %s is not on a tmpfs (filesystem magic %#x)", dir, fs.Type)
	}
	return nil
}

// checkIsolated is the whole check, run before every ostree command.
func checkIsolated(sysroot string) error {
	if err := checkUserns(); err != nil {
		return err
	}
	if err := checkMountns(); err != nil {
		return err
	}
	return checkTmpfs(sysroot)
}
