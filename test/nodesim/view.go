package nodesim

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"
)

// Caps on what readView takes from the helper's export.
const (
	maxViewFile    = 16 << 20
	maxViewEntries = 100000
)

// File is one entry of the node's tree.
type File struct {
	Type     byte        // tar.TypeReg, tar.TypeDir, tar.TypeSymlink, ...
	Mode     fs.FileMode // permission and set-id bits
	UID, GID int
	Data     []byte // regular files
	Link     string // symlinks
}

// View is the tree a node boots into: the deployment, with the
// stateroot's /var in place of the deployment's own.
type View struct {
	// Files by absolute path ("/etc/motd").
	Files map[string]File
	// Kernel is the version of the kernel the boot entry starts.
	Kernel string
	// Dropped counts the image's entries the import left out, by
	// top-level folder (or, for run, tmp, proc, sys and dev, by the name
	// under it).
	Dropped map[string]int
	// Took is how long the import and deployment took.
	Took time.Duration
}

// File returns the entry at p, following symlinks in p's folders (not in
// its last component) inside the tree, as the node's open(2) with
// O_NOFOLLOW would.
func (v *View) File(p string) (File, bool) {
	r, ok := v.resolveDir(path.Dir(path.Clean("/" + p)))
	if !ok {
		return File{}, false
	}
	f, ok := v.Files[path.Join(r, path.Base(p))]
	return f, ok
}

// resolveDir resolves folder p within the tree. When a folder is missing
// it returns the path resolved so far with the rest appended, and false.
func (v *View) resolveDir(p string) (string, bool) {
	cur := "/"
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for hops := 0; len(parts) > 0; {
		part := parts[0]
		parts = parts[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, part)
		f, ok := v.Files[next]
		if !ok {
			return path.Join(append([]string{next}, parts...)...), false
		}
		if f.Type != tar.TypeSymlink {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return next, false
		}
		if strings.HasPrefix(f.Link, "/") {
			cur = "/"
		}
		parts = append(strings.Split(strings.Trim(f.Link, "/"), "/"), parts...)
	}
	return cur, true
}

// Paths lists the tree's paths under prefix, sorted.
func (v *View) Paths(prefix string) []string {
	var ps []string
	for p := range v.Files {
		if p == prefix || strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/") {
			ps = append(ps, p)
		}
	}
	sort.Strings(ps)
	return ps
}

func readView(name string) (*View, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading the deployment's export: %w", err)
	}
	defer f.Close()
	v := &View{Files: map[string]File{}}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return v, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the deployment's export: %w", err)
		}
		if len(v.Files) >= maxViewEntries {
			return nil, fmt.Errorf("reading the deployment's export: over %d entries", maxViewEntries)
		}
		e := File{Type: hdr.Typeflag, Mode: fs.FileMode(hdr.Mode).Perm() | specialBits(hdr.Mode), UID: hdr.Uid, GID: hdr.Gid, Link: hdr.Linkname}
		if hdr.Typeflag == tar.TypeReg {
			if hdr.Size > maxViewFile {
				return nil, fmt.Errorf("reading the deployment's export: %s is over %d bytes", hdr.Name, maxViewFile)
			}
			if e.Data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("reading the deployment's export: %s: %w", hdr.Name, err)
			}
		}
		v.Files[path.Clean("/"+hdr.Name)] = e
	}
}

func specialBits(mode int64) fs.FileMode {
	var m fs.FileMode
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// Export writes the tree's entries under prefix (an absolute folder) into
// dir at the same paths, so host tools (modinfo -b, depmod -b) can read
// them: folders, regular files and symlinks as the node has them, other
// types left out. It writes through an os.Root, so no entry, not even
// one under a symlinked folder, lands outside dir.
func (v *View) Export(prefix, dir string) error {
	prefix = path.Clean("/" + prefix)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("exporting %s: %w", prefix, err)
	}
	defer root.Close()
	for _, p := range v.Paths(prefix) {
		f := v.Files[p]
		rel := strings.TrimPrefix(p, "/")
		if err := root.MkdirAll(path.Dir(rel), 0o755); err != nil {
			return fmt.Errorf("exporting %s: %w", p, err)
		}
		switch f.Type {
		case tar.TypeDir:
			err = root.MkdirAll(rel, 0o755)
		case tar.TypeReg:
			err = root.WriteFile(rel, f.Data, 0o644)
		case tar.TypeSymlink:
			err = root.Symlink(f.Link, rel)
		}
		if err != nil {
			return fmt.Errorf("exporting %s: %w", p, err)
		}
	}
	return nil
}
