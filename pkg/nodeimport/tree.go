package nodeimport

import (
	"path"
	"slices"
	"strings"
)

// Type is the kind of a filesystem object the import keeps.
type Type string

const (
	Regular Type = "file"
	Dir     Type = "dir"
	Symlink Type = "symlink"
)

// Fate is what the import does with a top-level folder's content.
type Fate string

const (
	// Kept: committed at the same path (usr, and everything when the root
	// is transient).
	Kept Fate = "kept"
	// EtcMoved: etc is committed as usr/etc, the defaults the node merges
	// into its /etc.
	EtcMoved Fate = "etc-moved"
	// VarFirstInstall: var is committed (or moved to usr/share/factory/var
	// on older nodes) and reaches the node's /var on first install only.
	VarFirstInstall Fate = "var-first-install"
	// Emptied: run, tmp, proc, sys, dev keep the folder, never content.
	Emptied Fate = "emptied"
	// Dropped: any other top-level folder or file, unless the root is
	// transient.
	Dropped Fate = "dropped"
)

// Entry is one object of the image or of the committed tree.
type Entry struct {
	Type   Type   `json:"type"`
	Mode   int64  `json:"mode"` // permission bits incl. setuid/setgid/sticky
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	Link   string `json:"link,omitempty"`   // symlink target
	Digest string `json:"digest,omitempty"` // sha256:… of a regular file's content
	Size   int64  `json:"size,omitempty"`
	// Source is the entry's path in the image (the container's view).
	Source string `json:"source"`
	// Layer is the index of the layer that wrote it.
	Layer int  `json:"layer"`
	Fate  Fate `json:"fate"`
	// data holds the content of the few small files the lints read
	// (passwd, tmpfiles.d, sysusers.d, prepare-root.conf).
	data []byte
}

// Same reports whether two entries are the same object as a node's file
// comparison sees it: type, mode, owner, target and content.
func (e Entry) Same(o Entry) bool {
	return e.Type == o.Type && e.Mode == o.Mode && e.UID == o.UID && e.GID == o.GID &&
		e.Link == o.Link && e.Digest == o.Digest
}

// Tree is what ostree commits from an image, by node path (/usr/etc/…,
// /var/… or /usr/share/factory/var/…), plus what the import left out.
type Tree struct {
	// Entries are the committed objects by node path. The root is absent.
	Entries map[string]Entry
	// Image is the image's own merged filesystem (after whiteouts), by
	// image path, as a container of it sees it.
	Image map[string]Entry
	// Omitted are the image paths whose content the node never commits:
	// emptied and dropped folders.
	Omitted []string
	// NonUsr says whether content outside usr, etc and var was kept
	// (transient root or composefs).
	NonUsr bool
	// FactoryVar says /var content was committed under
	// /usr/share/factory/var.
	FactoryVar bool
}

// Paths returns the committed node paths, sorted.
func (t *Tree) Paths() []string {
	return slices.Sorted(mapKeys(t.Entries))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// apiFolders are emptied by the import: systemd's API file systems
// (https://systemd.io/API_FILE_SYSTEMS/), mounted over on every boot.
var apiFolders = []string{"run", "tmp", "proc", "sys", "dev"}

// fate decides where an image path (absolute, cleaned) is committed: the
// node path and the fate; "" means not committed.
func fate(p string, nonUsr, factoryVar bool) (string, Fate) {
	rel := strings.TrimPrefix(p, "/")
	top, rest, _ := strings.Cut(rel, "/")
	switch {
	case top == "usr":
		return p, Kept
	case top == "etc":
		return path.Join("/usr/etc", rest), EtcMoved
	case top == "var":
		if factoryVar {
			return path.Join("/usr/share/factory/var", rest), VarFirstInstall
		}
		return p, VarFirstInstall
	case slices.Contains(apiFolders, top):
		if rest == "" {
			return p, Emptied // the folder itself stays
		}
		return "", Emptied
	case nonUsr:
		return p, Kept
	default:
		return "", Dropped
	}
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}
