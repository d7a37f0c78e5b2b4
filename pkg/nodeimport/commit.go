package nodeimport

import (
	"bufio"
	"slices"
	"strings"
)

// prepareRootConf is where a bootc base configures ostree-prepare-root
// (https://ostreedev.github.io/ostree/man/ostree-prepare-root.html).
const prepareRootConf = "/usr/lib/ostree/prepare-root.conf"

// commit maps the merged image to node paths by each top-level folder's
// fate.
func (im *importer) commit() *Tree {
	t := &Tree{Entries: make(map[string]Entry, len(im.image)), Image: im.image, FactoryVar: im.opts.FactoryVar}
	switch im.opts.NonUsr {
	case NonUsrKeep:
		t.NonUsr = true
	case NonUsrFromImage:
		t.NonUsr = transientRoot(im.image)
	}
	for _, p := range slices.Sorted(mapKeys(im.image)) {
		e := im.image[p]
		node, f := fate(p, t.NonUsr || im.ostreeLayers[e.Layer], t.FactoryVar)
		e.Fate = f
		im.image[p] = e
		if node == "" {
			t.Omitted = append(t.Omitted, p)
			continue
		}
		t.Entries[node] = e
	}
	return t
}

// transientRoot reads prepare-root.conf (a GLib key file): ostree-ext
// keeps content outside /usr when the root is transient or composefs is
// enabled.
func transientRoot(image map[string]Entry) bool {
	e, ok := image[prepareRootConf]
	if !ok {
		return false
	}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(string(e.data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = strings.TrimSpace(line[1 : len(line)-1])
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.ToLower(strings.TrimSpace(v))
		switch {
		case section == "root" && k == "transient" && truthy(v):
			return true
		case section == "composefs" && k == "enabled" && (truthy(v) || v == "signed" || v == "verity"):
			return true
		}
	}
	return false
}

func truthy(v string) bool { return v == "true" || v == "yes" || v == "1" }
