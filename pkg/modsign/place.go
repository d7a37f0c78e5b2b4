package modsign

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/kiln-dev/kiln/pkg/work"
)

// Where day-0 modules and firmware end up in the signed image.
//
// KMM's day-0 proposal
// (https://github.com/rh-ecosystem-edge/kernel-module-management/blob/main/docs/enhancements/0002_day0-integration.md)
// copies modules to /opt/lib/modules/<kver>/ and runs `depmod -b /opt`,
// the layout of KMM's day-2 ModuleLoader images, where modprobe is pointed
// at /opt. A day-0 image is the node's OS instead, and a node imports it
// with ostree's container import, which keeps /usr, moves /etc and applies
// /var only on first install; a top-level /opt is dropped
// (https://github.com/bootc-dev/bootc/blob/main/crates/ostree-ext/src/tar/write.rs),
// and on CoreOS /opt is a link into /var anyway. The booted kernel's
// modprobe reads /usr/lib/modules/<kver>/ only. So kiln keeps /opt as the
// build's input convention (filesToSign names it) and, when it signs,
// moves every module to /usr/lib/modules/<kver>/extra/ (the folder
// kernel builds use for out-of-tree modules), regenerates that kernel's
// modules.dep with depmod, and takes /opt out of the image.
//
// The proposal's firmware goes to /var/lib/firmware, which a node applies
// on first install only: an upgrade, the way every later day-0 image
// reaches the node, never writes it. kiln moves firmware to
// /usr/lib/firmware, where the kernel's firmware loader looks as well.
const (
	// ModulesDir is where the booted kernel's modules live on CoreOS.
	ModulesDir = "usr/lib/modules/"
	// ExtraDir is the folder under a kernel's modules folder that kiln
	// puts day-0 modules in.
	ExtraDir = "extra"
	// FirmwareDir is where kiln puts the image's firmware.
	FirmwareDir = "usr/lib/firmware/"
)

// movedRoots are the image folders kiln empties: KMM's /opt convention
// (also as /var/opt, where a COPY lands when /opt is CoreOS's link into
// /var) and the proposal's /var/lib/firmware.
var movedRoots = []string{"opt/", "var/opt/", "var/lib/firmware/"}

// Move and Placement are recorded in kmod-sign's report
// (work.KmodReport); aliases keep this package's code unchanged.
type (
	Move      = work.Move
	Placement = work.Placement
)

// ModuleDir returns /usr/lib/modules/<kver>/extra.
func ModuleDir(kver string) string { return "/" + ModulesDir + kver + "/" + ExtraDir }

// isMoved reports whether p (relative, clean) lies under a folder kiln
// empties, or is one of those folders.
func isMoved(p string) bool {
	for _, r := range movedRoots {
		if strings.HasPrefix(p+"/", r) {
			return true
		}
	}
	return false
}

// planPlacement decides where every file under the moved folders goes.
// signed are the filesToSign matches (absolute). Modules must be under
// <root>lib/modules/<kver>/ for the kernel the image is for; depmod's old
// output there is dropped (kiln runs depmod again for the real folder);
// firmware under <root>lib/firmware/ or var/lib/firmware/ goes to
// /usr/lib/firmware. Anything else under those folders is refused, naming
// the file: it would silently not reach the node.
func planPlacement(files fstest.MapFS, signed []string, kver string) (*Placement, error) {
	isSigned := map[string]bool{}
	for _, s := range signed {
		isSigned[strings.TrimPrefix(s, "/")] = true
	}
	pl := &Placement{Kernel: kver}
	linked := optLinked(files)
	for _, p := range sortedPaths(files) {
		f := files[p]
		if p == "opt" && linked || linked && strings.HasPrefix(p, "opt/") {
			continue // CoreOS's link, and the aliases aliasOpt made through it
		}
		if !isMoved(p) || f.Mode.IsDir() {
			if isSigned[p] && !strings.HasPrefix(p, ModulesDir+kver+"/") {
				return nil, fmt.Errorf("placing modules: /%s (spec.osMapping.sign.filesToSign) is neither under /opt/lib/modules/%s/ nor under /%s%s/: the kernel %s loads modules from /%s%s/ only", p, kver, ModulesDir, kver, kver, ModulesDir, kver)
			}
			continue
		}
		if !f.Mode.IsRegular() {
			return nil, fmt.Errorf("placing modules: /%s is not a regular file; a node drops /opt and applies /var only on first install, and kiln moves only regular module and firmware files out of them", p)
		}
		to, firmware, err := placeFile(p, kver)
		if err != nil {
			return nil, err
		}
		if to != "" && !fs.ValidPath(to) {
			return nil, fmt.Errorf("placing modules: /%s: not a plain path inside the image", p)
		}
		if to == "" {
			continue
		}
		m := Move{From: "/" + p, To: "/" + to, Signed: isSigned[p]}
		if firmware {
			pl.Firmware = append(pl.Firmware, m)
		} else {
			pl.Modules = append(pl.Modules, m)
		}
	}
	if err := noClash(pl); err != nil {
		return nil, err
	}
	return pl, nil
}

// placeFile maps one file under a moved folder: to is empty for a file
// that is dropped (depmod's output for the /opt tree).
func placeFile(p, kver string) (to string, firmware bool, err error) {
	for _, root := range []string{"opt/", "var/opt/"} {
		rest, ok := strings.CutPrefix(p, root)
		if !ok {
			continue
		}
		if fw, ok := strings.CutPrefix(rest, "lib/firmware/"); ok {
			return FirmwareDir + fw, true, nil
		}
		mods, ok := strings.CutPrefix(rest, "lib/modules/")
		if !ok {
			break
		}
		k, name, _ := strings.Cut(mods, "/")
		switch {
		case k != kver:
			return "", false, fmt.Errorf("placing modules: /%s is for kernel %q, but the image is built for kernel %s; a node boots one kernel and loads modules from its folder only", p, k, kver)
		case isModule(name):
			return ModulesDir + kver + "/" + ExtraDir + "/" + name, false, nil
		case !strings.Contains(name, "/") && strings.HasPrefix(name, "modules."):
			return "", false, nil
		}
		return "", false, fmt.Errorf("placing modules: /%s is neither a kernel module nor depmod's output; a node drops /%s, and kiln moves only modules and firmware out of it", p, strings.TrimSuffix(root, "/"))
	}
	if fw, ok := strings.CutPrefix(p, "var/lib/firmware/"); ok {
		return FirmwareDir + fw, true, nil
	}
	return "", false, fmt.Errorf("placing modules: /%s: a node drops /opt (and /var/opt is applied on first install only); kiln moves only /opt/lib/modules/%s/ and /opt/lib/firmware/ out of it", p, kver)
}

// placedPath is where kmod-sign puts a module that filesToSign names as
// p (a path or pattern with the kernel substituted): KMM's
// /opt/lib/modules/<kver>/X becomes /usr/lib/modules/<kver>/extra/X;
// anything else stays where it is.
func placedPath(p, kver string) string {
	if rest, ok := strings.CutPrefix(path.Clean(p), "/opt/lib/modules/"+kver+"/"); ok {
		return ModuleDir(kver) + "/" + rest
	}
	return p
}

// isModule: a kernel module, plain or compressed as kmod reads them.
func isModule(name string) bool {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if strings.HasSuffix(name, ext) && path.Base(name) != ext {
			return true
		}
	}
	return false
}

// noClash refuses two files moved to one place (the same module under
// /opt and /var/opt).
func noClash(pl *Placement) error {
	seen := map[string]string{}
	for _, m := range append(append([]Move(nil), pl.Modules...), pl.Firmware...) {
		if prev, ok := seen[m.To]; ok {
			return fmt.Errorf("placing modules: %s and %s would both become %s", prev, m.From, m.To)
		}
		seen[m.To] = m.From
	}
	return nil
}

func sortedPaths(files fstest.MapFS) []string {
	out := make([]string, 0, len(files))
	for p := range files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}
