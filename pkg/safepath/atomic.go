package safepath

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data so that a crash or a failed write
// leaves either the old file or the new one, never a partial file. The mode
// is set to perm exactly (no umask), as results and state files are read by
// other users of the workspace.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	return WriteAtomic(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteAtomic is WriteFileAtomic for content produced by write: when write
// fails, path is left as it was and the temporary file is removed.
func WriteAtomic(path string, perm fs.FileMode, write func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer root.Close()
	if err := writeAtomicIn(root, base, perm, write); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeAtomicIn writes rel inside root through a temporary file in rel's
// folder: the file is synced before the rename and the folder after it, so
// the new name survives a power loss too
// (https://lwn.net/Articles/457667/). Every step resolves inside root.
func writeAtomicIn(root *os.Root, rel string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	// A rename would replace a symlink rather than write through it; refuse
	// anything but a regular file, as a write through os.Root would refuse a
	// link that leads outside.
	if fi, err := root.Lstat(rel); err == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file", rel, fi.Mode().Type())
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, err := tempName(rel)
	if err != nil {
		return err
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
		}
	}()
	if err = write(f); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = root.Rename(tmp, rel); err != nil {
		return err
	}
	return syncDir(root, filepath.Dir(rel))
}

// tempName is a hidden, unpredictable name next to rel, so that two
// writers never share a temporary file and a listing skips it.
func tempName(rel string) (string, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+"."+hex.EncodeToString(b[:])+".tmp"), nil
}

func syncDir(root *os.Root, rel string) error {
	d, err := root.Open(rel)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
