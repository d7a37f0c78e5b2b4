package importfilter

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// The layer filter stands in for what ostree-ext does to each derived
// (non-ostree) layer before handing it to `ostree commit --tree=tar=`:
// see filter_tar and normalize_validate_path in
// https://github.com/bootc-dev/bootc/blob/main/crates/ostree-ext/src/tar/write.rs
// It is kiln's own code, written from that behaviour:
//   - a path or link target that is not UTF-8 fails the layer;
//   - ".." in a path fails the layer; "/" and "./" prefixes are dropped;
//   - the first component decides: usr kept; etc moved to usr/etc (hard link
//     targets too); var kept (ostree 2024.3+) or moved to
//     usr/share/factory/var (older nodes); run, tmp, proc, sys, dev kept as
//     empty folders (their contents dropped); anything else dropped unless
//     the node allows a transient root.
// What ostree then does with the filtered stream (device nodes, hard links
// to files outside the layer, whiteouts) is left to the real ostree.

// maxLayerBytes caps what the filter reads of one layer and, since a
// sparse entry expands, what it writes.
const maxLayerBytes = 1 << 30

// apiFolders are the API filesystems whose contents the import drops.
var apiFolders = map[string]bool{"run": true, "tmp": true, "proc": true, "sys": true, "dev": true}

// Config is the node's import behaviour.
type Config struct {
	FactoryVar    bool // var -> usr/share/factory/var
	AllowNonUsr   bool // keep other top-level folders (transient root)
	PAXPathBypass bool // a PAX path record keeps its original name
	// Base marks the image's own (ostree-encapsulated) layers: ostree-ext
	// imports those as the ostree commit they were exported from, so only
	// the etc -> usr/etc move applies and nothing is dropped.
	Base bool
	// KeepNonUTF8 skips ostree-ext's UTF-8 check, so that ostree itself
	// judges such a name (tests of what ostree does).
	KeepNonUTF8 bool
	// MaxBytes overrides maxLayerBytes.
	MaxBytes int64
}

// Filter copies the layer tar r to w as the import would pass it to
// ostree, and counts the dropped entries by top-level folder.
func Filter(r io.Reader, w io.Writer, cfg Config) (map[string]int, error) {
	limit := int64(maxLayerBytes)
	if cfg.MaxBytes > 0 {
		limit = cfg.MaxBytes
	}
	lr := &io.LimitedReader{R: r, N: limit + 1}
	left := limit
	tr := tar.NewReader(lr)
	tw := tar.NewWriter(w)
	dropped := map[string]int{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading layer: %w", err)
		}
		if lr.N <= 0 || hdr.Size > left {
			return nil, fmt.Errorf("reading layer: over %d bytes", limit)
		}
		left -= max(hdr.Size, 0)
		name, keep, err := normalize(hdr.Name, cfg)
		if err != nil {
			return nil, err
		}
		if !keep {
			dropped[name]++
			continue
		}
		if err := copyEntry(tw, tr, hdr, name, cfg); err != nil {
			return nil, err
		}
	}
	return dropped, tw.Close()
}

// normalize returns the path the import gives name, or, when the entry is
// dropped, its top-level folder and false.
func normalize(name string, cfg Config) (string, bool, error) {
	if !utf8.ValidString(name) && !cfg.KeepNonUTF8 {
		return "", false, fmt.Errorf("layer entry %q: path is not UTF-8: ostree-ext refuses the layer", name)
	}
	var parts []string
	for _, p := range strings.Split(name, "/") {
		switch p {
		case "", ".":
		case "..":
			return "", false, fmt.Errorf("layer entry %q: path has \"..\": ostree-ext refuses the layer", name)
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "./", true, nil
	}
	first := parts[0]
	switch {
	case first == "usr":
	case first == "etc":
		parts = append([]string{"usr"}, parts...)
	case cfg.Base:
	case first == "var" && cfg.FactoryVar:
		parts = append([]string{"usr", "share", "factory"}, parts...)
	case first == "var":
	case apiFolders[first]:
		if len(parts) > 1 {
			return parts[1], false, nil
		}
	case cfg.AllowNonUsr:
	default:
		return first, false, nil
	}
	return "./" + strings.Join(parts, "/"), true, nil
}

// remapEtc moves a hard link's target as the import moves paths.
func remapEtc(target string) string {
	t := strings.TrimPrefix(strings.TrimPrefix(target, "./"), "/")
	if t == "etc" || strings.HasPrefix(t, "etc/") {
		return "usr/" + t
	}
	return target
}

func copyEntry(tw *tar.Writer, tr *tar.Reader, hdr *tar.Header, name string, cfg Config) error {
	if (hdr.Typeflag == tar.TypeSymlink || hdr.Typeflag == tar.TypeLink) && !utf8.ValidString(hdr.Linkname) {
		return fmt.Errorf("layer entry %q: link target %q is not UTF-8: ostree-ext refuses the layer", hdr.Name, hdr.Linkname)
	}
	out := *hdr
	out.Name = name
	if hdr.Typeflag == tar.TypeLink {
		out.Linkname = remapEtc(hdr.Linkname)
	}
	// ostree-ext writes the stream with the tar crate, which encodes long
	// names as GNU long-name entries; extended attributes are not carried
	// by this simulation (no SELinux labels here).
	out.Format, out.PAXRecords, out.Xattrs = tar.FormatGNU, nil, nil
	if p, ok := hdr.PAXRecords["path"]; ok && cfg.PAXPathBypass {
		// The affected ostree-ext versions re-emit the entry's PAX
		// records after renaming it; the reader then takes the PAX path,
		// which is the name before the etc -> usr/etc move.
		out.Name, out.Format = p, tar.FormatPAX
	}
	if err := tw.WriteHeader(&out); err != nil {
		return fmt.Errorf("layer entry %q: writing it for ostree: %w", hdr.Name, err)
	}
	if hdr.Typeflag == tar.TypeReg {
		if _, err := io.Copy(tw, tr); err != nil {
			return fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
	}
	return nil
}
