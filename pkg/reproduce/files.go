package reproduce

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// FileInfo is what kiln compares of one tar entry: everything that ends
// up on a node's disk from it.
type FileInfo struct {
	// Type is file, dir, symlink, hardlink, char, block, fifo or the tar
	// type flag.
	Type string `json:"type"`
	Size int64  `json:"size"`
	// SHA256 is the content's sha256 (regular files only).
	SHA256 string `json:"sha256,omitempty"`
	// Mode is the permission and special bits, octal (0644, 4755).
	Mode  string    `json:"mode"`
	Mtime time.Time `json:"mtime"`
	UID   int       `json:"uid"`
	GID   int       `json:"gid"`
	// Link is a symlink's or hard link's target.
	Link string `json:"link,omitempty"`
	// Xattrs are the extended attributes (PAX SCHILY.xattr.*), name=value
	// sorted; security.capability and SELinux labels live here.
	Xattrs []string `json:"xattrs,omitempty"`
}

// FileDiff is one path that differs between the two layers at one index.
type FileDiff struct {
	Path string `json:"path"`
	// Change is "added" (only in the rebuild), "removed" (only in the
	// image) or "changed".
	Change  string    `json:"change"`
	Image   *FileInfo `json:"image,omitempty"`
	Rebuilt *FileInfo `json:"rebuilt,omitempty"`
	// Differs names the attributes that differ for a changed file.
	Differs []string `json:"differs,omitempty"`
}

// listLayer reads a layer's uncompressed tar into path → FileInfo, and
// the order of its entries. A path listed twice keeps its last entry, as
// extracting the layer would.
func listLayer(l v1.Layer) (map[string]FileInfo, []string, error) {
	if l == nil {
		return map[string]FileInfo{}, nil, nil
	}
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, nil, err
	}
	defer rc.Close()
	files := map[string]FileInfo{}
	var order []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, order, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading the tar stream: %w", err)
		}
		fi, err := fileInfo(h, tr)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", h.Name, err)
		}
		p := cleanPath(h.Name)
		files[p] = fi
		order = append(order, p)
	}
}

// cleanPath makes tar names comparable: "./etc/x", "etc/x" and "etc/x/"
// are all /etc/x.
func cleanPath(name string) string {
	return path.Clean("/" + strings.TrimPrefix(name, "./"))
}

func fileInfo(h *tar.Header, r io.Reader) (FileInfo, error) {
	fi := FileInfo{
		Type: typeName(h.Typeflag), Size: h.Size, Mode: fmt.Sprintf("%04o", h.Mode&0o7777),
		Mtime: h.ModTime.UTC(), UID: h.Uid, GID: h.Gid, Link: h.Linkname,
	}
	for k, v := range h.PAXRecords {
		if name, ok := strings.CutPrefix(k, "SCHILY.xattr."); ok {
			fi.Xattrs = append(fi.Xattrs, name+"="+hex.EncodeToString([]byte(v)))
		}
	}
	slices.Sort(fi.Xattrs)
	if h.Typeflag == tar.TypeReg {
		s := sha256.New()
		if _, err := io.Copy(s, r); err != nil {
			return fi, err
		}
		fi.SHA256 = "sha256:" + hex.EncodeToString(s.Sum(nil))
	}
	return fi, nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeReg:
		return "file"
	case tar.TypeDir:
		return "dir"
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hardlink"
	case tar.TypeChar:
		return "char"
	case tar.TypeBlock:
		return "block"
	case tar.TypeFifo:
		return "fifo"
	}
	return fmt.Sprintf("type %q", t)
}

// diffFiles lists every path whose entry differs, sorted by path.
func diffFiles(a, b map[string]FileInfo) []FileDiff {
	var out []FileDiff
	for p, fa := range a {
		fb, ok := b[p]
		switch {
		case !ok:
			out = append(out, FileDiff{Path: p, Change: "removed", Image: ptr(fa)})
		default:
			if d := differs(fa, fb); len(d) > 0 {
				out = append(out, FileDiff{Path: p, Change: "changed", Image: ptr(fa), Rebuilt: ptr(fb), Differs: d})
			}
		}
	}
	for p, fb := range b {
		if _, ok := a[p]; !ok {
			out = append(out, FileDiff{Path: p, Change: "added", Rebuilt: ptr(fb)})
		}
	}
	slices.SortFunc(out, func(x, y FileDiff) int { return strings.Compare(x.Path, y.Path) })
	return out
}

func ptr(f FileInfo) *FileInfo { return &f }

// differs names the attributes of a and b that differ.
func differs(a, b FileInfo) []string {
	var d []string
	add := func(name string, diff bool) {
		if diff {
			d = append(d, name)
		}
	}
	add("type", a.Type != b.Type)
	add("size", a.Size != b.Size)
	add("sha256", a.SHA256 != b.SHA256)
	add("mode", a.Mode != b.Mode)
	add("mtime", !a.Mtime.Equal(b.Mtime))
	add("uid", a.UID != b.UID)
	add("gid", a.GID != b.GID)
	add("link", a.Link != b.Link)
	add("xattrs", !slices.Equal(a.Xattrs, b.Xattrs))
	return d
}

// modeString shows a FileInfo's type and mode as ls -l does
// (-rw-r--r--, drwxr-xr-x, -rwsr-xr-x).
func modeString(f *FileInfo) string {
	var m int64
	fmt.Sscanf(f.Mode, "%o", &m)
	b := []byte("----------")
	switch f.Type {
	case "dir":
		b[0] = 'd'
	case "symlink":
		b[0] = 'l'
	case "char":
		b[0] = 'c'
	case "block":
		b[0] = 'b'
	case "fifo":
		b[0] = 'p'
	}
	for i, c := range "rwxrwxrwx" {
		if m&(1<<(8-i)) != 0 {
			b[1+i] = byte(c)
		}
	}
	special := func(bit int64, pos int, set, unset byte) {
		if m&bit == 0 {
			return
		}
		if b[pos] == 'x' {
			b[pos] = set
		} else {
			b[pos] = unset
		}
	}
	special(0o4000, 3, 's', 'S')
	special(0o2000, 6, 's', 'S')
	special(0o1000, 9, 't', 'T')
	return string(b)
}
