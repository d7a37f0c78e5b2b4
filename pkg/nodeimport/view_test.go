package nodeimport

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func file(src, body string) Entry {
	return Entry{Type: Regular, Mode: 0o644, Digest: digestOf(body), Size: int64(len(body)), Source: src}
}

// seen is a view reduced to content per path, for comparisons.
func seen(v *View) map[string]string {
	out := map[string]string{}
	for p, e := range v.Files {
		if e.Type == Regular {
			out[p] = e.Digest
		}
	}
	return out
}

func TestNodeView(t *testing.T) {
	image := with(kernel("k1"), []ent{
		reg("etc/chrony.conf", "image chrony"), reg("etc/motd", "image motd"), reg("etc/removed.conf", "image"),
		reg("etc/new.conf", "image new"), reg("var/lib/kiln/state", "image var"), reg("opt/tool", "t"),
	})
	tree, _ := importLayers(t, Options{}, image)
	old := map[string]Entry{
		"/etc/chrony.conf": file("/etc/chrony.conf", "old chrony"), "/etc/motd": file("/etc/motd", "old motd"),
		"/etc/removed.conf": file("/etc/removed.conf", "old"),
	}
	cases := []struct {
		name     string
		node     Node
		want     map[string]string
		wantLost []Loss
	}{{
		name: "first install",
		node: Node{},
		want: map[string]string{
			"/usr/lib/modules/k1/vmlinuz": digestOf("kernel k1"),
			"/usr/etc/chrony.conf":        digestOf("image chrony"), "/etc/chrony.conf": digestOf("image chrony"),
			"/usr/etc/motd": digestOf("image motd"), "/etc/motd": digestOf("image motd"),
			"/usr/etc/removed.conf": digestOf("image"), "/etc/removed.conf": digestOf("image"),
			"/usr/etc/new.conf": digestOf("image new"), "/etc/new.conf": digestOf("image new"),
			"/var/lib/kiln/state": digestOf("image var"),
		},
		wantLost: []Loss{{"/opt/tool", LostOmitted}},
	}, {
		name: "upgrade over local edits",
		node: Node{
			Upgrade:  true,
			Defaults: old,
			Etc: map[string]Entry{
				// chrony.conf untouched, motd edited by the daemon,
				// removed.conf deleted by an admin, a local file added.
				"/etc/chrony.conf": file("/etc/chrony.conf", "old chrony"), "/etc/motd": file("/etc/motd", "node motd"),
				"/etc/local.conf": file("/etc/local.conf", "node local"),
			},
			Var: map[string]Entry{"/var/lib/kiln/state": file("/var/lib/kiln/state", "node var")},
		},
		want: map[string]string{
			"/usr/lib/modules/k1/vmlinuz": digestOf("kernel k1"),
			"/usr/etc/chrony.conf":        digestOf("image chrony"), "/etc/chrony.conf": digestOf("image chrony"),
			"/usr/etc/motd": digestOf("image motd"), "/etc/motd": digestOf("node motd"),
			"/usr/etc/removed.conf": digestOf("image"),
			"/usr/etc/new.conf":     digestOf("image new"), "/etc/new.conf": digestOf("image new"),
			"/etc/local.conf":     digestOf("node local"),
			"/var/lib/kiln/state": digestOf("node var"),
		},
		wantLost: []Loss{
			{"/etc/motd", LostLocalEtc}, {"/etc/removed.conf", LostLocalGone},
			{"/opt/tool", LostOmitted}, {"/var/lib/kiln/state", LostVarUpgrade},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := NodeView(tree, c.node)
			if d := cmp.Diff(c.want, seen(v)); d != "" {
				t.Errorf("files (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.wantLost, v.Lost); d != "" {
				t.Errorf("lost (-want +got):\n%s", d)
			}
		})
	}
}

func TestNodeViewFactoryVarOnFirstInstall(t *testing.T) {
	tree, _ := importLayers(t, Options{FactoryVar: true}, with(kernel("k1"), []ent{reg("var/lib/x", "v")}))
	want := map[string]string{
		"/usr/lib/modules/k1/vmlinuz":  digestOf("kernel k1"),
		"/usr/share/factory/var/lib/x": digestOf("v"), "/var/lib/x": digestOf("v"),
	}
	if d := cmp.Diff(want, seen(NodeView(tree, Node{}))); d != "" {
		t.Errorf("files (-want +got):\n%s", d)
	}
	up := seen(NodeView(tree, Node{Upgrade: true}))
	if _, ok := up["/var/lib/x"]; ok {
		t.Errorf("an upgrade copied the factory /var into /var")
	}
}

// TestNodeViewUpgradeFromPreviousTree: a node that booted one image and
// had one /etc file edited locally upgrades to the next image: the edited
// file keeps the node's copy, an untouched one gets the new image's.
func TestNodeViewUpgradeFromPreviousTree(t *testing.T) {
	prev, _ := importLayers(t, Options{}, with(kernel("k1"), []ent{reg("etc/a.conf", "a1"), reg("etc/b.conf", "b1")}))
	next, _ := importLayers(t, Options{}, with(kernel("k1"), []ent{reg("etc/a.conf", "a2"), reg("etc/b.conf", "b2")}))
	etc := prev.Defaults()
	etc["/etc/b.conf"] = file("/etc/b.conf", "edited on the node")
	v := NodeView(next, Node{Upgrade: true, Defaults: prev.Defaults(), Etc: etc})
	got := map[string]string{"/etc/a.conf": v.Files["/etc/a.conf"].Digest, "/etc/b.conf": v.Files["/etc/b.conf"].Digest}
	want := map[string]string{"/etc/a.conf": digestOf("a2"), "/etc/b.conf": digestOf("edited on the node")}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("/etc after the upgrade (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Loss{{"/etc/b.conf", LostLocalEtc}}, v.Lost); d != "" {
		t.Errorf("lost (-want +got):\n%s", d)
	}
}
