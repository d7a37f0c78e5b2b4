package safepath

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// ErrNotRegular says a path is not a regular file: a FIFO, device, socket
// or folder, which a bounded read refuses before reading a byte.
var ErrNotRegular = errors.New("not a regular file")

// ReadRegular reads at most max bytes of the regular file at path;
// truncated says there was more. Symlinks are followed (a workspace file
// may be one), but what they point at must be a regular file: the file is
// opened non-blocking, so a FIFO cannot hold the open, and its type is
// checked on the open descriptor, so it cannot be swapped after the check.
func ReadRegular(path string, max int64) (data []byte, truncated bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return readOpened(f, path, max)
}

// ReadRegularIn is ReadRegular for rel inside dir: rel must be local, and
// neither it nor a symlink on its way may resolve outside dir (os.Root).
func ReadRegularIn(dir, rel string, max int64) (data []byte, truncated bool, err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, false, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	return readOpened(f, filepath.Join(dir, rel), max)
}

// readOpened reads at most max bytes of the open file f if it is regular.
func readOpened(f *os.File, path string, max int64) (data []byte, truncated bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("reading %s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	data, err = io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > max {
		return data[:max], true, nil
	}
	return data, false, nil
}
