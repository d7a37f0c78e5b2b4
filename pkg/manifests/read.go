package manifests

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// MaxFileBytes caps one manifest file. The apiserver stores an object of at
// most about 1.5 MiB (etcd's default request limit) and takes a request
// body of at most 3 MiB, so a file of several such objects fits with room
// to spare; anything larger is not a folder of manifests but a mistake or
// an attack, and the cap keeps one file from costing more memory than the
// whole render is allowed.
const MaxFileBytes = 16 << 20

// readManifest reads one file of a manifest folder: only a regular file,
// or a symlink whose target is a regular file, and at most MaxFileBytes.
// The type is checked before the file is opened, so a FIFO, a device or a
// socket never blocks or streams (a FIFO's open waits for a writer,
// /dev/zero never ends); the file is opened non-blocking and checked again
// by its descriptor, so a swap between the check and the open fails closed.
func readManifest(path string, d fs.DirEntry) ([]byte, error) {
	target := path
	if d != nil && d.Type()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, exitcode.InputRejected(fmt.Errorf("%s: following symlink: %w", path, err))
		}
		target = t
	}
	fi, err := os.Stat(target)
	if err != nil {
		return nil, err
	}
	if err := regular(path, target, fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(target, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(path, target, fi); err != nil {
		return nil, err
	}
	return readCapped(path, f)
}

// regular refuses anything but a regular file of at most MaxFileBytes.
func regular(path, target string, fi fs.FileInfo) error {
	via := ""
	if target != path {
		via = fmt.Sprintf(" (symlink to %s)", target)
	}
	if !fi.Mode().IsRegular() {
		return exitcode.InputRejected(fmt.Errorf("%s%s: not a regular file (%s): only regular files are read from a manifest folder", path, via, fileType(fi.Mode())))
	}
	if fi.Size() > MaxFileBytes {
		return tooLarge(path + via)
	}
	return nil
}

// readCapped reads r whole, refusing more than MaxFileBytes.
func readCapped(name string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(b) > MaxFileBytes {
		return nil, tooLarge(name)
	}
	return b, nil
}

func tooLarge(name string) error {
	return exitcode.InputRejected(fmt.Errorf("%s: larger than %d bytes, the limit for one manifest file", name, MaxFileBytes))
}

func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return m.Type().String()
}
