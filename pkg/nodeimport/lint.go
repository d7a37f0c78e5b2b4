package nodeimport

import (
	"bufio"
	"fmt"
	"path"
	"slices"
	"strings"
)

// lint runs the whole-image rules over the merged image.
func lint(t *Tree) []Finding {
	paths := slices.Sorted(mapKeys(t.Image))
	var fs []Finding
	fs = append(fs, lintKernel(t.Image, paths)...)
	fs = append(fs, lintEtcUsrEtc(paths)...)
	if e, ok := t.Image["/var/run"]; ok && e.Type != Symlink {
		fs = append(fs, finding(RuleVarRun, Error, "/var/run", "/var/run is a %s; it must be a symlink to /run (the node mounts /run as tmpfs)", e.Type))
	}
	for _, dir := range []string{"/proc", "/sys", "/dev"} {
		for _, p := range inside(paths, dir) {
			fs = append(fs, finding(RuleAPIDirs, Error, p, "content under %s, an API file system the kernel mounts over at boot; ostree-ext drops it and it never reaches a node", dir))
		}
	}
	for _, dir := range []string{"/run", "/tmp"} {
		if in := inside(paths, dir); len(in) > 0 {
			fs = append(fs, finding(RuleNonemptyRun, Warning, in[0], "%d entries under %s, which the import empties and the node mounts as tmpfs; none reaches a node", len(in), dir))
		}
	}
	if in := inside(paths, "/boot"); len(in) > 0 && !t.NonUsr {
		fs = append(fs, finding(RuleNonemptyBoot, Warning, in[0], "%d entries under /boot; the import drops them (kernels belong in /usr/lib/modules/<kver>)", len(in)))
	}
	fs = append(fs, lintDropped(t)...)
	fs = append(fs, lintVarTmpfiles(t.Image, paths)...)
	fs = append(fs, lintSysusers(t.Image)...)
	return fs
}

func finding(rule string, sev Severity, p, format string, args ...any) Finding {
	return Finding{Rule: rule, Severity: sev, Path: p, Layer: -1, Message: fmt.Sprintf(format, args...)}
}

// inside returns the sorted paths strictly inside dir.
func inside(sorted []string, dir string) []string {
	var out []string
	for _, p := range sorted {
		if p != dir && under(p, dir) {
			out = append(out, p)
		}
	}
	return out
}

// lintKernel wants exactly one /usr/lib/modules/<kver> with a vmlinuz:
// with two, which one boots is up to directory order.
func lintKernel(image map[string]Entry, paths []string) []Finding {
	var kernels []string
	for _, p := range paths {
		if dir, base := path.Split(p); base == "vmlinuz" && path.Dir(path.Clean(dir)) == "/usr/lib/modules" && image[p].Type == Regular {
			kernels = append(kernels, path.Clean(dir))
		}
	}
	switch len(kernels) {
	case 1:
		return nil
	case 0:
		return []Finding{finding(RuleKernel, Error, "/usr/lib/modules", "no /usr/lib/modules/<kver>/vmlinuz: the node would have no kernel to boot")}
	default:
		return []Finding{finding(RuleKernel, Error, kernels[1], "%d kernels (%s): which one boots is up to directory order; keep exactly one", len(kernels), strings.Join(kernels, ", "))}
	}
}

func lintEtcUsrEtc(paths []string) []Finding {
	etc, usrEtc := inside(paths, "/etc"), inside(paths, "/usr/etc")
	if len(etc) == 0 || len(usrEtc) == 0 {
		return nil
	}
	return []Finding{finding(RuleEtcUsrEtc, Error, usrEtc[0], "both /etc (%d entries) and /usr/etc (%d entries) have content; the import moves /etc to /usr/etc, so one overwrites the other (use /etc only)", len(etc), len(usrEtc))}
}

// lintDropped names each dropped top-level folder or file once.
func lintDropped(t *Tree) []Finding {
	count := map[string]int{}
	for _, p := range t.Omitted {
		if e := t.Image[p]; e.Fate == Dropped {
			top := "/" + strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
			if top != "/boot" {
				count[top]++
			}
		}
	}
	var fs []Finding
	for _, top := range slices.Sorted(mapKeys(count)) {
		fs = append(fs, finding(RuleDroppedFolder, Warning, top, "%d entries under top-level %s are dropped by the import: only /usr, /etc and /var reach a node unless the base enables a transient root or composefs (%s)", count[top], top, prepareRootConf))
	}
	return fs
}

// lintVarTmpfiles warns about /var content no tmpfiles.d line creates: the
// node applies the image's /var on first install only.
func lintVarTmpfiles(image map[string]Entry, paths []string) []Finding {
	declared := map[string]bool{}
	for _, p := range paths {
		if d := path.Dir(p); (d == "/usr/lib/tmpfiles.d" || d == "/etc/tmpfiles.d") && strings.HasSuffix(p, ".conf") {
			for _, line := range lines(image[p].data) {
				if f := strings.Fields(line); len(f) >= 2 {
					declared[path.Clean(f[1])] = true
				}
			}
		}
	}
	var fs []Finding
	reported := ""
	for _, p := range inside(paths, "/var") {
		if reported != "" && under(p, reported) || p == "/var/run" || coveredBy(p, declared) {
			continue
		}
		reported = p
		fs = append(fs, finding(RuleVarTmpfiles, Warning, p, "no tmpfiles.d entry creates it: a node applies the image's /var on first install only and keeps its own /var on every upgrade"))
	}
	return fs
}

func coveredBy(p string, declared map[string]bool) bool {
	for q := p; q != "/var" && q != "/"; q = path.Dir(q) {
		if declared[q] {
			return true
		}
	}
	return false
}

// lintSysusers warns about /etc/passwd users no sysusers.d file declares:
// /etc is merged on upgrade, so a user the image adds to /etc/passwd is
// lost on any node whose /etc/passwd changed locally.
func lintSysusers(image map[string]Entry) []Finding {
	pw, ok := image["/etc/passwd"]
	if !ok {
		return nil
	}
	declared := map[string]bool{}
	for p, e := range image {
		if d := path.Dir(p); (d == "/usr/lib/sysusers.d" || d == "/etc/sysusers.d") && strings.HasSuffix(p, ".conf") {
			for _, line := range lines(e.data) {
				if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[0], "u") {
					declared[f[1]] = true
				}
			}
		}
	}
	var missing []string
	for _, line := range lines(pw.data) {
		if name, _, ok := strings.Cut(line, ":"); ok && name != "" && !declared[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return []Finding{finding(RuleSysusers, Warning, "/etc/passwd", "users not declared in sysusers.d: %s; a node whose /etc/passwd changed keeps its own copy on upgrade and never gets them", strings.Join(missing, ", "))}
}

// lines returns the non-comment lines of a small config file.
func lines(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}
