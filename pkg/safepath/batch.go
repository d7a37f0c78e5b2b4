package safepath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sync"
)

// WriteFilesAtomic writes each of files (file name → content) in dir with
// mode perm, each replaced whole as by WriteFileAtomic, at the cost of
// about two syncs instead of two per file: every temporary file is written
// and synced at once (ext4 and XFS commit concurrent fsyncs of one journal
// together), then all are renamed, then dir is synced once. Nothing is
// renamed until every file is written and synced, so a failed write (a
// full disk, a folder in a file's place) leaves every file as it was and
// no temporary file. Each name must be one path element (see Element).
func WriteFilesAtomic(dir string, files map[string][]byte, perm fs.FileMode) error {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range files {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if err := Element(n); err != nil {
			return fmt.Errorf("writing in %s: %w", dir, err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing in %s: %w", dir, err)
	}
	defer root.Close()
	temps := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, n := range names {
		wg.Go(func() {
			if temps[i], errs[i] = writeTemp(root, n, files[n], perm); errs[i] != nil {
				errs[i] = fmt.Errorf("writing %s: %w", fileIn(dir, n), errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, tmp := range temps {
			if tmp != "" {
				_ = root.Remove(tmp)
			}
		}
		return err
	}
	for i, n := range names {
		if err := root.Rename(temps[i], n); err != nil {
			for _, tmp := range temps[i:] {
				_ = root.Remove(tmp)
			}
			return fmt.Errorf("writing %s: %w", fileIn(dir, n), err)
		}
	}
	if err := syncDir(root, "."); err != nil {
		return fmt.Errorf("writing in %s: %w", dir, err)
	}
	return nil
}

func fileIn(dir, name string) string { return dir + string(os.PathSeparator) + name }

// writeTemp writes data to a new temporary file next to rel, with mode
// perm, synced and closed, and returns its name; rel itself must be a
// regular file or absent. On an error no temporary file is left.
func writeTemp(root *os.Root, rel string, data []byte, perm fs.FileMode) (tmp string, err error) {
	if fi, err := root.Lstat(rel); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is a %s, not a regular file", rel, fi.Mode().Type())
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if tmp, err = tempName(rel); err != nil {
		return "", err
	}
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(tmp)
			tmp = ""
		}
	}()
	if _, err = f.Write(data); err != nil {
		return tmp, err
	}
	if err = f.Chmod(perm); err != nil {
		return tmp, err
	}
	if err = f.Sync(); err != nil {
		return tmp, err
	}
	return tmp, f.Close()
}
