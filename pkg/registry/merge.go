package registry

import (
	"slices"
	"sort"
)

// mergedSet is every mirror of one source, from every object that names
// it, in the order the nodes try them.
type mergedSet struct {
	source  string
	mirrors []string
	// never is mirrorSourcePolicy NeverContactSource on any of them.
	never bool
}

// mergeSets merges the mirror lists given for each source, the way MCO
// does (runtime-utils mergedMirrorSets): each list's order is kept as
// "before" constraints, the source itself comes after the last mirror of
// a list that does not name it, and the constraints are sorted
// topologically with ties (and cycles) broken by name, so two objects
// listing a, b and b, c give a, b, c, while two unrelated lists [y] and
// [x] give x, y whatever the order of the objects. The source is dropped
// when it sorts last (registries.conf tries it last anyway) and kept in
// place otherwise. A list without a mirror other than the source is
// ignored, its mirrorSourcePolicy too. The result is sorted by source.
func mergeSets(rules []mirrorRule) []mergedSet {
	lists := map[string][][]string{}
	never := map[string]bool{}
	for _, r := range rules {
		if !slices.ContainsFunc(r.mirrors, func(m string) bool { return m != r.source }) {
			continue
		}
		lists[r.source] = append(lists[r.source], r.mirrors)
		never[r.source] = never[r.source] || r.never
	}
	var out []mergedSet
	for source, ls := range lists {
		g := graph{}
		for _, l := range ls {
			for i := 0; i+1 < len(l); i++ {
				g.edge(l[i], l[i+1])
			}
			if !slices.Contains(l, source) {
				g.edge(l[len(l)-1], source)
			}
		}
		order := g.sorted()
		if order[len(order)-1] == source {
			order = order[:len(order)-1]
		}
		out = append(out, mergedSet{source: source, mirrors: order, never: never[source]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].source < out[j].source })
	return out
}

// graph is a small directed graph of mirror names: for each node, the
// nodes that must come after it.
type graph map[string]map[string]bool

func (g graph) edge(from, to string) {
	if g[from] == nil {
		g[from] = map[string]bool{}
	}
	if g[to] == nil {
		g[to] = map[string]bool{}
	}
	g[from][to] = true
}

// sorted orders the nodes so every edge points forward where it can.
// Nodes become ready when all their predecessors are placed; ready nodes
// are placed first-come first-served, each newly ready batch in name
// order, the first batch being the nodes without predecessors in name
// order. When nothing is ready (a cycle), the smallest unplaced name is
// placed next. This is the order MCO writes, which kiln must reproduce
// mirror for mirror.
func (g graph) sorted() []string {
	names := make([]string, 0, len(g))
	pending := map[string]int{} // predecessors not yet placed
	for n, outs := range g {
		names = append(names, n)
		for to := range outs {
			pending[to]++
		}
	}
	sort.Strings(names)
	placed := map[string]bool{}
	var queue, out []string
	for _, n := range names {
		if pending[n] == 0 {
			queue = append(queue, n)
		}
	}
	for len(out) < len(names) {
		var n string
		if len(queue) > 0 {
			n, queue = queue[0], queue[1:]
		} else {
			for _, c := range names {
				if !placed[c] {
					n = c
					break
				}
			}
		}
		placed[n] = true
		out = append(out, n)
		var ready []string
		for to := range g[n] {
			pending[to]--
			if pending[to] == 0 && !placed[to] {
				ready = append(ready, to)
			}
		}
		sort.Strings(ready)
		queue = append(queue, ready...)
	}
	return out
}
