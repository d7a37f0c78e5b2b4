package nodeimport

import (
	"path"
	"slices"
	"strings"
)

// Node is the state of a node before it deploys an image: what an upgrade
// merges with. The zero Node is a first install.
type Node struct {
	// Upgrade says the node already runs a deployment; false is a first
	// install (the node's /etc and /var start from the image).
	Upgrade bool
	// Defaults are the booted deployment's /usr/etc, by /etc path: the
	// base of ostree's three-way /etc merge.
	Defaults map[string]Entry
	// Etc is the node's current /etc, by /etc path, including what
	// Ignition, the machine-config daemon or an admin wrote.
	Etc map[string]Entry
	// Var is the node's /var, by /var path; an upgrade never changes it.
	Var map[string]Entry
}

// Loss is an image path a node does not see as the image has it, and why.
type Loss struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// View is what a node sees after deploying a Tree: its filesystem by path
// and the image content it does not get.
type View struct {
	Files map[string]Entry
	Lost  []Loss
}

// Reasons a node does not see an image path.
const (
	LostOmitted    = "the import empties or drops its top-level folder"
	LostLocalEtc   = "the node changed this /etc file locally; ostree's three-way merge keeps the node's copy"
	LostLocalGone  = "the node deleted this /etc file locally; ostree's three-way merge keeps it deleted"
	LostVarUpgrade = "/var is applied on first install only; the node keeps its own /var on upgrade"
)

// Defaults are t's /etc defaults (its /usr/etc) by /etc path: the
// Node.Defaults of a node that booted t, for simulating an upgrade from it.
func (t *Tree) Defaults() map[string]Entry {
	out := map[string]Entry{}
	for p, e := range t.Entries {
		if p != "/usr/etc" && under(p, "/usr/etc") {
			out[path.Join("/etc", strings.TrimPrefix(p, "/usr/etc"))] = e
		}
	}
	return out
}

// NodeView deploys t onto node: /usr as committed, /etc as ostree's
// three-way merge makes it (the image's defaults, with every file the
// node changed, added or removed locally kept as the node has it), /var
// from the image on first install and the node's own on upgrade.
func NodeView(t *Tree, node Node) *View {
	v := &View{Files: map[string]Entry{}}
	defaults := map[string]Entry{}
	for p, e := range t.Entries {
		switch {
		case under(p, "/usr/etc"):
			defaults[path.Join("/etc", strings.TrimPrefix(p, "/usr/etc"))] = e
			v.Files[p] = e
		case under(p, "/var"):
			if !node.Upgrade {
				v.Files[p] = e
			} else if p != "/var" {
				v.Lost = append(v.Lost, Loss{Path: e.Source, Reason: LostVarUpgrade})
			}
		default:
			v.Files[p] = e
			if t.FactoryVar && under(p, "/usr/share/factory/var") && !node.Upgrade {
				// tmpfiles.d copies the factory /var on first boot.
				v.Files[path.Join("/var", strings.TrimPrefix(p, "/usr/share/factory/var"))] = e
			}
		}
	}
	mergeEtc(v, defaults, node)
	for p, e := range node.Var {
		if node.Upgrade {
			v.Files[p] = e
		}
	}
	for _, p := range t.Omitted {
		v.Lost = append(v.Lost, Loss{Path: p, Reason: LostOmitted})
	}
	slices.SortFunc(v.Lost, func(a, b Loss) int { return strings.Compare(a.Path, b.Path) })
	return v
}

// mergeEtc is ostree's /etc merge
// (https://ostreedev.github.io/ostree/atomic-upgrades/): start from the
// new defaults and replay the node's local changes against its old ones.
func mergeEtc(v *View, defaults map[string]Entry, node Node) {
	etc := map[string]Entry{}
	for p, e := range defaults {
		etc[p] = e
	}
	if node.Upgrade {
		for p, old := range node.Defaults {
			cur, ok := node.Etc[p]
			switch {
			case !ok:
				if _, still := etc[p]; still {
					v.Lost = append(v.Lost, Loss{Path: etc[p].Source, Reason: LostLocalGone})
				}
				delete(etc, p)
			case !cur.Same(old):
				keepLocal(v, etc, p, cur)
			}
		}
		for p, cur := range node.Etc {
			if _, known := node.Defaults[p]; !known {
				keepLocal(v, etc, p, cur)
			}
		}
	}
	for p, e := range etc {
		v.Files[p] = e
	}
}

func keepLocal(v *View, etc map[string]Entry, p string, cur Entry) {
	if img, ok := etc[p]; ok && !img.Same(cur) {
		v.Lost = append(v.Lost, Loss{Path: img.Source, Reason: LostLocalEtc})
	}
	etc[p] = cur
}
