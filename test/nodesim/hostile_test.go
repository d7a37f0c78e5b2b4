package nodesim

import (
	"archive/tar"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// longEtcName is an /etc file whose name (120 bytes) USTAR cannot hold:
// Go's archive/tar writes its path as a PAX record.
var longEtcName = "etc/" + strings.Repeat("n", 120)

// outcome is what real ostree made of an image: the error of the upgrade,
// or the booted kernel, the dropped entries and the files asked about.
type outcome struct {
	Err     string
	Kernel  string
	Dropped map[string]int
	Files   map[string]string
}

// hostileCase is an image built directly with go-containerregistry,
// holding what the node's import has rules about.
type hostileCase struct {
	name  string
	opts  Options
	layer func(t testing.TB) v1.Layer
	ask   []string // files to report
	want  outcome
}

var baseKernel = KernelVersion

func hostileCases() []hostileCase {
	paxLong := func(t testing.TB) v1.Layer {
		m := reg(longEtcName, "long name\n")
		m.hdr.Format = tar.FormatPAX
		return layerOf(t, m)
	}
	return []hostileCase{
		{name: "hard link to a base file", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, hardlink("usr/bin/passwd-copy", "etc/passwd"))
		}, want: outcome{Err: "Processing deferred hardlink usr/etc/passwd: Failed to find object"}},
		{name: "hard link inside the layer", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("usr/bin/a", "same\n"), hardlink("usr/bin/b", "usr/bin/a"))
		}, ask: []string{"/usr/bin/b"}, want: outcome{Kernel: baseKernel, Files: map[string]string{"/usr/bin/b": "0 -rw-r--r-- 0:0 \"same\\n\""}}},
		{name: "device node", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, member{hdr: tar.Header{Name: "usr/lib/null", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o666}})
		}, want: outcome{Err: `Unsupported file type for path "usr/lib/null"`}},
		{name: "fifo", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, member{hdr: tar.Header{Name: "usr/lib/fifo", Typeflag: tar.TypeFifo, Mode: 0o644}})
		}, want: outcome{Err: `Unsupported file type for path "usr/lib/fifo"`}},
		{name: "non-UTF-8 name", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("usr/lib/bad\xff", "x"))
		}, want: outcome{Err: `path is not UTF-8: ostree-ext refuses the layer`}},
		{name: "non-UTF-8 name past ostree-ext's check", opts: Options{rawNames: true}, layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("usr/lib/bad\xff", "x"))
		}, want: outcome{Err: `Invalid UTF-8 in filename`}},
		{name: "second kernel sorting after the base's", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("usr/lib/modules/6.99.0-rt/vmlinuz", "k"), reg("usr/lib/modules/6.99.0-rt/initramfs.img", "i"))
		}, want: outcome{Kernel: "6.99.0-rt"}},
		{name: "second kernel sorting before the base's", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("usr/lib/modules/4.18.0-rt/vmlinuz", "k"), reg("usr/lib/modules/4.18.0-rt/initramfs.img", "i"))
		}, want: outcome{Kernel: baseKernel}},
		{name: "opt, run, boot and a top-level file", layer: func(t testing.TB) v1.Layer {
			return layerOf(t, dir("opt/"), reg("opt/tool/bin", "x"), reg("run/kiln", "x"), reg("boot/extra", "x"), reg("top-level", "x"))
		}, ask: []string{"/run", "/run/kiln", "/var/opt/tool/bin"}, want: outcome{Kernel: baseKernel,
			Dropped: map[string]int{"opt": 2, "kiln": 1, "boot": 1, "top-level": 1},
			Files:   map[string]string{"/run": "5 -rwxr-xr-x 0:0 \"\"", "/run/kiln": "absent", "/var/opt/tool/bin": "absent"}}},
		{name: "opt with a transient root", opts: Options{TransientRoot: true}, layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("opt/tool/bin", "x"))
		}, ask: []string{"/opt", "/var/opt/tool/bin"}, want: outcome{Kernel: baseKernel,
			// Kept by the import, but the base's /opt is a symlink into
			// /var: the union checkout writes through it into the image's
			// /var, which an upgrade never applies.
			Files: map[string]string{"/opt": "-> var/opt", "/var/opt/tool/bin": "absent"}}},
		{name: "120-byte /etc name in a PAX path record", layer: paxLong, ask: []string{"/" + longEtcName},
			want: outcome{Kernel: baseKernel, Files: map[string]string{"/" + longEtcName: "0 -rw-r--r-- 0:0 \"long name\\n\""}}},
		{name: "120-byte /etc name, PAX path bypassing the etc move", opts: Options{PAXPathBypassesEtc: true}, layer: paxLong,
			want: outcome{Err: "Tree contains both /etc and /usr/etc"}},
		{name: "var on an older node", opts: Options{FactoryVar: true}, layer: func(t testing.TB) v1.Layer {
			return layerOf(t, reg("var/lib/app/state", "s\n"))
		}, ask: []string{"/var/lib/app/state", "/usr/share/factory/var/lib/app/state"}, want: outcome{Kernel: baseKernel,
			Files: map[string]string{"/var/lib/app/state": "absent", "/usr/share/factory/var/lib/app/state": "0 -rw-r--r-- 0:0 \"s\\n\""}}},
	}
}

// TestHostileImagesOnNode upgrades a node to each image and records what
// real ostree does with it: the upgrade fails (hard link to a base file,
// device node, fifo; non-UTF-8 names fail in ostree-ext's filter, and in
// ostree's own import past it; a PAX
// path that escaped the etc move fails the deployment), the content is
// dropped (opt, boot, top-level files, run's contents), or it is kept (a
// second kernel boots or not by ostree's order; with a transient root
// /opt content still ends in the image's /var). The import model is
// checked against this table.
func TestHostileImagesOnNode(t *testing.T) {
	base := mustBase(t)
	nodes := map[Options]*Node{}
	for _, tc := range hostileCases() {
		// One node per behaviour, kept across cases: each image is the
		// base plus its layer, so an earlier upgrade leaves nothing in
		// /usr; a failed one changes nothing.
		n := nodes[tc.opts]
		if n == nil {
			n = New(t, tc.opts)
			if _, err := n.Deploy(base); err != nil {
				t.Fatal(err)
			}
			nodes[tc.opts] = n
		}
		t.Run(tc.name, func(t *testing.T) {
			got := upgradeOutcome(t, n, derived(t, base, tc.layer(t)), tc.ask)
			if tc.want.Err != "" && strings.Contains(got.Err, tc.want.Err) {
				got.Err = tc.want.Err
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("what the node made of the image (-want +got):\n%s", d)
			}
		})
	}
}

func upgradeOutcome(t *testing.T, n *Node, img v1.Image, ask []string) outcome {
	v, err := n.Upgrade(img)
	if err != nil {
		return outcome{Err: err.Error()}
	}
	t.Logf("imported and deployed in %v", v.Took)
	o := outcome{Kernel: v.Kernel}
	if len(v.Dropped) > 0 {
		o.Dropped = v.Dropped
	}
	for _, p := range ask {
		if o.Files == nil {
			o.Files = map[string]string{}
		}
		f, ok := v.File(p)
		o.Files[p] = describe(f, ok)
	}
	return o
}
