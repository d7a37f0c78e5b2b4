package safepath

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Element checks that name is one path element: not empty, not "." or
// "..", without a separator or a NUL. Use it on a file name built from
// outside input before joining it.
func Element(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`+"\x00") {
		return fmt.Errorf("%q is not a single file name", name)
	}
	return nil
}

// WriteFile writes data to rel inside dir, creating dir and rel's parent
// folders inside it. rel must be local (filepath.IsLocal) and must not
// resolve outside dir through a symlink. The write is atomic, as
// WriteFileAtomic's, and rel gets mode perm exactly.
func WriteFile(dir, rel string, data []byte, perm fs.FileMode) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("writing %q in %s: the path leaves the folder", rel, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing %q in %s: %w", rel, dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("writing %q in %s: %w", rel, dir, err)
	}
	defer root.Close()
	if parent := filepath.Dir(rel); parent != "." {
		if err := root.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("writing %q in %s: %w", rel, dir, err)
		}
	}
	write := func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
	if err := writeAtomicIn(root, rel, perm, write); err != nil {
		return fmt.Errorf("writing %q in %s: %w", rel, dir, err)
	}
	return nil
}
