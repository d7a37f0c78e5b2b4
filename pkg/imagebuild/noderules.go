package imagebuild

import (
	"archive/tar"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// Rules kiln adds for MachineConfig content, besides nodeimport's.
const (
	// RuleMCOVar: a MachineConfig file under /var reaches a node from the
	// image on first install only.
	RuleMCOVar = "mco-var"
	// RuleMCODropped: a MachineConfig file in a folder the node's import
	// empties or drops is left out of the layer.
	RuleMCODropped = "mco-dropped"
	// RuleMode: MCO's file mode rule (no setuid, setgid, sticky).
	RuleMode = "mode"
)

// apiFolders hold kernel API file systems: content there is an attack on
// the node (a sysctl or device path), never configuration.
var apiFolders = []string{"proc", "sys", "dev"}

// nodeFolders reach a node from the image: usr, etc (merged into /etc) and
// var (first install only).
var nodeFolders = []string{"usr", "etc", "var"}

// nodeRules applies the node import's rules to the planned entries, so a
// MachineConfig the node could not import is refused naming the config,
// the file and the rule before any base is read. Entries in folders the
// import drops are left out of the layer with a warning: MCO's daemon
// writes them on the node as it applies the MachineConfig.
func (p *planner) nodeRules() {
	for _, k := range slices.Sorted(mapKeys(p.entries)) {
		e := p.entries[k]
		if !p.entryRules(e) {
			continue
		}
		top, _, _ := strings.Cut(strings.TrimPrefix(e.Path, "/"), "/")
		switch {
		case slices.Contains(apiFolders, top):
			p.ruleErrorf(e, nodeimport.RuleAPIDirs, "under /%s, a kernel API file system mounted over at boot; a MachineConfig may not write there", top)
		case !slices.Contains(nodeFolders, top):
			delete(p.entries, k)
			p.warn(e, RuleMCODropped, "the node's image import empties or drops /%s, so the layer leaves it out; MCO's daemon writes the file when it applies the MachineConfig", top)
		case top == "var":
			p.warn(e, RuleMCOVar, "a node applies the image's /var on first install only and keeps its own /var on upgrade; MCO's daemon writes the file when it applies the MachineConfig")
		}
	}
}

// entryRules checks one entry's name, owner, mode and link; false means
// it was refused.
func (p *planner) entryRules(e Entry) bool {
	n := len(p.errs)
	if e.Path == "/" {
		p.ruleErrorf(e, nodeimport.RulePath, "the path is / itself, an empty tar name")
	}
	for _, c := range strings.Split(strings.TrimPrefix(e.Path, "/"), "/") {
		if len(c) > 255 {
			p.ruleErrorf(e, nodeimport.RuleNameLength, "a path component is %d bytes, over Linux's NAME_MAX of 255", len(c))
			break
		}
	}
	for _, id := range []struct {
		name string
		v    int
	}{{"user.id", e.UID}, {"group.id", e.GID}} {
		if id.v < 0 || id.v > 1<<32-2 {
			p.ruleErrorf(e, nodeimport.RuleOwner, "%s %d is outside 0..%d", id.name, id.v, 1<<32-2)
		}
	}
	if e.Type == tar.TypeLink {
		p.hardlinkRules(e)
	}
	return len(p.errs) == n
}

// hardlinkRules: a hard link must name a regular file of this layer; the
// node's import refuses a link into the base (e.g. the base's
// /etc/shadow) or out of the root.
func (p *planner) hardlinkRules(e Entry) {
	if slices.Contains(strings.Split(e.Link, "/"), "..") {
		p.ruleErrorf(e, nodeimport.RuleHardlink, "the target %q leaves the root (`..`)", e.Link)
		return
	}
	t, ok := p.entries[path.Clean("/"+e.Link)]
	if !ok || t.Type != tar.TypeReg {
		p.ruleErrorf(e, nodeimport.RuleHardlink, "the target %q is not a regular file of this MachineConfig; the node's import refuses a hard link into the base image", e.Link)
	}
}

func (p *planner) ruleErrorf(e Entry, rule, format string, args ...any) {
	p.errorf("%s %s: [%s] %s", e.Origin, e.Path, rule, fmt.Sprintf(format, args...))
}

func (p *planner) warn(e Entry, rule, format string, args ...any) {
	p.warnings = append(p.warnings, nodeimport.Finding{
		Rule: rule, Severity: nodeimport.Warning, Path: e.Path, Layer: -1,
		Message: fmt.Sprintf("%s of MachineConfig %s: %s", e.Origin, p.mc, fmt.Sprintf(format, args...)),
	})
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
