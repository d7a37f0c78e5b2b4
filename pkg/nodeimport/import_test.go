package nodeimport

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ruleCase is a layer on perRuleBase and the findings it gives.
type ruleCase struct {
	name  string
	layer []ent
	want  []brief
}

// perRuleBase is the base layer of perRuleCases.
func perRuleBase() []ent {
	return with(kernel("5.14.0-1.el9.x86_64"), []ent{dir("etc"), reg("etc/os-release", "ID=rhcos\n"), reg("usr/bin/true", "")})
}

// perRuleCases are one layer per rule (or none) on perRuleBase.
func perRuleCases() []ruleCase {
	long := strings.Repeat("n", 120)
	return []ruleCase{
		{"clean config layer", []ent{dir("etc/"), reg("etc/chrony.conf", "pool x\n"), reg("usr/lib/systemd/system/x.service", "[Unit]\n")}, []brief{}},
		{"non-UTF-8 name", []ent{reg("usr/share/caf\xe9", "x")}, []brief{{RuleUTF8, Error, "/usr/share/caf\xe9"}}},
		{"non-UTF-8 symlink target", []ent{sym("usr/bin/l", "caf\xe9")}, []brief{{RuleUTF8, Error, "/usr/bin/l"}}},
		{"dot-dot component", []ent{reg("usr/../etc/shadow", "x")}, []brief{{RulePath, Error, "/usr/../etc/shadow"}}},
		{"empty name", []ent{reg("", "x")}, []brief{{RulePath, Error, "/"}}},
		{"300-byte component", []ent{reg("etc/"+strings.Repeat("a", 300), "x")}, []brief{{RuleNameLength, Error, "/etc/" + strings.Repeat("a", 300)}}},
		{"fifo", []ent{typed("usr/share/fifo", tar.TypeFifo)}, []brief{{RuleFileType, Error, "/usr/share/fifo"}}},
		{"PAX global header", []ent{{name: "pax_global_header", typ: tar.TypeXGlobalHeader, format: tar.FormatPAX}, reg("usr/share/after", "x")}, []brief{}},
		{"character device", []ent{typed("usr/share/null", tar.TypeChar)}, []brief{{RuleFileType, Error, "/usr/share/null"}}},
		{"hard link into the same layer", []ent{reg("usr/bin/a", "x"), hard("usr/bin/b", "usr/bin/a")}, []brief{}},
		{"hard link to a base file", []ent{hard("usr/bin/b", "etc/os-release")}, []brief{{RuleHardlink, Error, "/usr/bin/b"}}},
		{"hard link leaving the root", []ent{hard("etc/s", "../../../etc/shadow")}, []brief{{RuleHardlink, Error, "/etc/s"}}},
		{"negative uid", []ent{{name: "etc/u", typ: tar.TypeReg, mode: 0o644, uid: -5, format: tar.FormatGNU}}, []brief{{RuleOwner, Error, "/etc/u"}}},
		{"gid 2^40", []ent{{name: "etc/g", typ: tar.TypeReg, mode: 0o644, gid: 1 << 40}}, []brief{{RuleOwner, Error, "/etc/g"}}},
		{"PAX path record under etc", []ent{{name: "etc/" + long, typ: tar.TypeReg, mode: 0o644, format: tar.FormatPAX}}, []brief{{RulePAXPathEtc, Error, "/etc/" + long}}},
		{"GNU long name under etc", []ent{{name: "etc/" + long, typ: tar.TypeReg, mode: 0o644, format: tar.FormatGNU}}, []brief{}},
		{"PAX path record under usr", []ent{{name: "usr/share/" + long, typ: tar.TypeReg, mode: 0o644, format: tar.FormatPAX}}, []brief{}},
		{"second kernel", kernel("5.14.0-1.el9.x86_64+rt"), []brief{{RuleKernel, Error, "/usr/lib/modules/5.14.0-1.el9.x86_64"}}},
		{"etc and usr/etc", []ent{reg("usr/etc/x", "x")}, []brief{{RuleEtcUsrEtc, Error, "/usr/etc/x"}}},
		{"var/run folder", []ent{dir("var/run")}, []brief{{RuleVarRun, Error, "/var/run"}}},
		{"var/run symlink", []ent{sym("var/run", "../run")}, []brief{}},
		{"proc content", []ent{reg("proc/sys/kernel/core_pattern", "|/bin/sh")}, []brief{{RuleAPIDirs, Error, "/proc/sys/kernel/core_pattern"}}},
		{"sys content", []ent{dir("sys/"), dir("sys/kernel"), reg("sys/kernel/x", "1")}, []brief{{RuleAPIDirs, Error, "/sys/kernel"}, {RuleAPIDirs, Error, "/sys/kernel/x"}}},
		{"run and tmp content", []ent{reg("run/a", ""), reg("tmp/b", "")}, []brief{{RuleNonemptyRun, Warning, "/run/a"}, {RuleNonemptyRun, Warning, "/tmp/b"}}},
		{"boot content", []ent{reg("boot/vmlinuz", "k")}, []brief{{RuleNonemptyBoot, Warning, "/boot/vmlinuz"}}},
		{"opt and a top-level file", []ent{reg("opt/lib/modules/x.ko", "k"), reg("opt/b", ""), reg("top", "")}, []brief{{RuleDroppedFolder, Warning, "/opt"}, {RuleDroppedFolder, Warning, "/top"}}},
		{"var without tmpfiles.d", []ent{dir("var/lib/foo"), reg("var/lib/foo/state", "")}, []brief{{RuleVarTmpfiles, Warning, "/var/lib/foo"}}},
		{"var with tmpfiles.d", []ent{reg("usr/lib/tmpfiles.d/foo.conf", "d /var/lib/foo 0755 root root -\n"), dir("var/lib/foo"), reg("var/lib/foo/state", "")}, []brief{}},
		{"passwd user without sysusers", []ent{reg("etc/passwd", "root:x:0:0::/root:/bin/bash\nkiln:x:900:900::/:/sbin/nologin\n"), reg("usr/lib/sysusers.d/basic.conf", "u root 0 \"root\"\n")}, []brief{{RuleSysusers, Warning, "/etc/passwd"}}},
		{"passwd users all in sysusers", []ent{reg("etc/passwd", "root:x:0:0::/root:/bin/bash\n"), reg("usr/lib/sysusers.d/basic.conf", "u root 0 \"root\"\n")}, []brief{}},
	}
}

func TestImportFindingsPerRule(t *testing.T) {
	base := perRuleBase()
	for _, c := range perRuleCases() {
		t.Run(c.name, func(t *testing.T) {
			_, fs := importLayers(t, Options{}, base, c.layer)
			if d := cmp.Diff(c.want, briefs(fs)); d != "" {
				t.Errorf("findings (-want +got):\n%s\n%v", d, fs)
			}
		})
	}
}

func TestImportRefusesLayerAfterDotDot(t *testing.T) {
	tree, fs := importLayers(t, Options{}, with(kernel("k1"), []ent{reg("usr/../x", ""), reg("usr/after", "")}))
	if _, ok := tree.Entries["/usr/after"]; ok {
		t.Errorf("entries after a `..` entry were imported; ostree-ext fails the whole layer")
	}
	if d := cmp.Diff([]brief{{RulePath, Error, "/usr/../x"}}, briefs(fs)); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

func TestImportNoKernel(t *testing.T) {
	_, fs := importLayers(t, Options{}, []ent{reg("usr/bin/true", "")})
	if d := cmp.Diff([]brief{{RuleKernel, Error, "/usr/lib/modules"}}, briefs(fs)); d != "" {
		t.Errorf("findings (-want +got):\n%s", d)
	}
}

func TestImportWhiteouts(t *testing.T) {
	base := with(kernel("k1"), []ent{
		reg("usr/share/a/one", "1"), reg("usr/share/a/two", "2"), reg("usr/share/b", "b"),
		reg("etc/gone.conf", "g"), dir("usr/share/c"), reg("usr/share/c/keep", "k"),
	})
	upper := []ent{
		reg("usr/share/a/.wh..wh..opq", ""), reg("usr/share/a/three", "3"),
		reg("usr/share/.wh.b", ""), reg("etc/.wh.gone.conf", ""),
		reg("usr/share/c/.wh.missing", ""),
	}
	tree, fs := importLayers(t, Options{}, base, upper)
	if len(fs) != 0 {
		t.Fatalf("findings: %v", fs)
	}
	want := []string{
		"/usr", "/usr/lib", "/usr/lib/modules", "/usr/lib/modules/k1", "/usr/lib/modules/k1/vmlinuz",
		"/usr/share", "/usr/share/a", "/usr/share/a/three", "/usr/share/c", "/usr/share/c/keep",
	}
	if d := cmp.Diff(want, withParents(tree)); d != "" {
		t.Errorf("committed paths (-want +got):\n%s", d)
	}
}

// withParents lists the committed paths and the folders implied by them,
// as ostree commits parents a tar stream leaves out.
func withParents(t *Tree) []string {
	set := map[string]bool{}
	for p := range t.Entries {
		for q := p; q != "/"; q = parentDir(q) {
			set[q] = true
		}
	}
	out := []string{}
	for p := range set {
		out = append(out, p)
	}
	return sortStrings(out)
}

func TestImportFates(t *testing.T) {
	layer := with(kernel("k1"), []ent{
		reg("etc/motd", "hi"), reg("var/lib/x", "v"), reg("opt/y", "o"), dir("run"), reg("run/z", ""),
		reg("usr/lib/ostree/prepare-root.conf", "[composefs]\nenabled = no\n"),
	})
	cases := []struct {
		name string
		opts Options
		conf string
		want map[string]Fate
	}{
		{"new ostree, /usr only", Options{}, "", map[string]Fate{"/usr/etc/motd": EtcMoved, "/var/lib/x": VarFirstInstall, "/run": Emptied}},
		{"old ostree moves /var to the factory", Options{FactoryVar: true}, "", map[string]Fate{"/usr/etc/motd": EtcMoved, "/usr/share/factory/var/lib/x": VarFirstInstall, "/run": Emptied}},
		{"transient root keeps /opt", Options{}, "[root]\ntransient = true\n", map[string]Fate{"/usr/etc/motd": EtcMoved, "/var/lib/x": VarFirstInstall, "/opt/y": Kept, "/run": Emptied}},
		{"composefs keeps /opt", Options{}, "[composefs]\nenabled = yes\n", map[string]Fate{"/usr/etc/motd": EtcMoved, "/var/lib/x": VarFirstInstall, "/opt/y": Kept, "/run": Emptied}},
		{"switch drops /opt whatever the image says", Options{NonUsr: NonUsrDrop}, "[root]\ntransient = true\n", map[string]Fate{"/usr/etc/motd": EtcMoved, "/var/lib/x": VarFirstInstall, "/run": Emptied}},
		{"switch keeps /opt", Options{NonUsr: NonUsrKeep}, "", map[string]Fate{"/usr/etc/motd": EtcMoved, "/var/lib/x": VarFirstInstall, "/opt/y": Kept, "/run": Emptied}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var top []ent
			if c.conf != "" {
				top = []ent{reg("usr/lib/ostree/prepare-root.conf", c.conf)}
			}
			tree, _ := importLayers(t, c.opts, layer, top)
			got := map[string]Fate{}
			for p, e := range tree.Entries {
				if !strings.HasPrefix(p, "/usr/lib") {
					got[p] = e.Fate
				}
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("fates (-want +got):\n%s", d)
			}
		})
	}
}

func TestImportKeepsHardlinkContentAndOstreeBaseLayout(t *testing.T) {
	// An ostree-format base: objects under sysroot/ostree/repo, hard
	// links from the tree into them, and CoreOS's top-level symlinks.
	obj := "sysroot/ostree/repo/objects/ab/cdef.file"
	base := with(kernel("k1"), []ent{reg(obj, "object"), hard("usr/bin/tool", obj), sym("home", "var/home")})
	tree, fs := importLayers(t, Options{}, base)
	if len(fs) != 0 {
		t.Fatalf("findings: %v", fs)
	}
	tool, ok := tree.Entries["/usr/bin/tool"]
	if !ok || tool.Type != Regular || tool.Digest != digestOf("object") {
		t.Errorf("/usr/bin/tool = %+v, want the object's content", tool)
	}
	if e, ok := tree.Entries["/home"]; !ok || e.Link != "var/home" {
		t.Errorf("/home = %+v, want the base's symlink kept", e)
	}
	if _, ok := tree.Entries["/sysroot/ostree/repo/objects/ab/cdef.file"]; ok {
		t.Errorf("the object store was committed as content")
	}
}
