package reproduce

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/test/golden"
)

var epoch = time.Unix(0, 0).UTC()

// entry is one tar entry of a test layer.
type entry struct {
	name, body string
	typ        byte
	mode       int64
	mtime      time.Time
	uid, gid   int
	link       string
}

func file(name, body string) entry {
	return entry{name: name, body: body, typ: tar.TypeReg, mode: 0o644}
}

func layerOf(t *testing.T, level int, es ...entry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, ModTime: e.mtime, Uid: e.uid, Gid: e.gid,
			Linkname: e.link, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if h.ModTime.IsZero() {
			h.ModTime = epoch
		}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithCompressionLevel(level))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image is a test image: a base layer, then layers, with labels, env and
// one history entry per layer.
type image struct {
	layers [][]entry
	labels map[string]string
	env    []string
	level  int
}

var baseLayer = []entry{
	{name: "usr/", typ: tar.TypeDir, mode: 0o755},
	file("usr/bin/sh", "#!sh"),
	{name: "usr/bin/bash", typ: tar.TypeSymlink, link: "sh", mode: 0o777},
}

func (im image) build(t *testing.T) v1.Image {
	t.Helper()
	level := im.level
	if level == 0 {
		level = 6
	}
	img := empty.Image
	for i, es := range append([][]entry{baseLayer}, im.layers...) {
		lv := level
		if i == 0 {
			lv = 6 // the base is the same blob on both sides
		}
		var err error
		img, err = mutate.Append(img, mutate.Addendum{Layer: layerOf(t, lv, es...),
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: "layer " + string(rune('0'+i))}})
		if err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Created = v1.Time{Time: epoch}
	cfg.Config.Labels = im.labels
	cfg.Config.Env = im.env
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func honest() image {
	return image{
		layers: [][]entry{{
			{name: "etc/", typ: tar.TypeDir, mode: 0o755},
			file("etc/machine-config-daemon/currentconfig", `{"kind":"MachineConfig"}`),
			file("etc/motd", "hello"),
		}},
		labels: map[string]string{"kiln.dev/pool": "worker"},
		env:    []string{"PATH=/usr/bin"},
	}
}

// Each change to an image shows up as the difference it is, and only it.
func TestCompareNamesWhatDiffers(t *testing.T) {
	cases := []struct {
		name   string
		change func(*image)
		// want are substrings of the text report; none means identical.
		want []string
	}{
		{"identical", func(*image) {}, nil},
		{"changed file content", func(im *image) { im.layers[0][2] = file("etc/motd", "hacked!") },
			[]string{"layer 1 differs", "changed  /etc/motd (size, sha256)", "1 files differ"}},
		{"added file", func(im *image) { im.layers[0] = append(im.layers[0], file("etc/backdoor", "x")) },
			[]string{"added  /etc/backdoor"}},
		{"removed file", func(im *image) { im.layers[0] = im.layers[0][:2] }, []string{"removed  /etc/motd"}},
		{"mode", func(im *image) { im.layers[0][2].mode = 0o4755 }, []string{"changed  /etc/motd (mode)", "-rwsr-xr-x"}},
		{"mtime", func(im *image) { im.layers[0][2].mtime = time.Unix(1700000000, 0) },
			[]string{"changed  /etc/motd (mtime)", "2023-11-14T22:13:20Z"}},
		{"owner", func(im *image) { im.layers[0][2].uid, im.layers[0][2].gid = 1000, 1000 },
			[]string{"changed  /etc/motd (uid, gid)", "1000:1000"}},
		{"label", func(im *image) { im.labels = map[string]string{"kiln.dev/pool": "infra"} },
			[]string{"config differs", "label kiln.dev/pool", `image    "worker"`, `rebuilt  "infra"`}},
		{"env", func(im *image) { im.env = append(im.env, "SOURCE_DATE_EPOCH=1") },
			[]string{"env SOURCE_DATE_EPOCH", "image    (none)"}},
		{"entry order", func(im *image) {
			l := im.layers[0]
			l[1], l[2] = l[2], l[1]
		}, []string{"tar entries are in another order"}},
		{"compression only", func(im *image) { im.level = 1 }, []string{"same uncompressed content (diffID)"}},
		{"extra layer", func(im *image) { im.layers = append(im.layers, []entry{file("opt/x", "x")}) },
			[]string{"layer 2 differs", "(no layer)", "only the rebuild has this layer", "history[2].created_by"}},
	}
	img := honest().build(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			im := honest()
			c.change(&im)
			rebuilt := im.build(t)
			d, err := Compare(img, rebuilt)
			if err != nil {
				t.Fatal(err)
			}
			if (len(c.want) == 0) != d.Empty() {
				t.Fatalf("Empty() = %v for %+v", d.Empty(), d)
			}
			var out strings.Builder
			rep := Report{}
			rep.add(Result{Image: "r/os@sha256:" + strings.Repeat("a", 64), Kind: "node-image", Rebuilt: "sha256:b", Identical: d.Empty(), Diff: &d})
			rep.WriteText(&out)
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, out.String())
				}
			}
			for _, line := range strings.Split(out.String(), "\n")[1:] {
				if len([]rune(line)) > Width {
					t.Errorf("line over %d columns: %q", Width, line)
				}
			}
			// The base layer is the same blob on both sides: never listed.
			for _, l := range d.Layers {
				if l.Index == 0 {
					t.Errorf("the shared base layer is listed: %+v", l)
				}
			}
		})
	}
}

// An index is compared platform by platform.
func TestCompareIndexPairsPlatforms(t *testing.T) {
	amd, arm := honest().build(t), honest().build(t)
	bad := honest()
	bad.layers[0][2] = file("etc/motd", "hacked")
	idx := func(a, b v1.Image) v1.ImageIndex {
		return mutate.AppendManifests(empty.Index,
			mutate.IndexAddendum{Add: a, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
			mutate.IndexAddendum{Add: b, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	}
	d, err := CompareIndex(idx(amd, arm), idx(amd, bad.build(t)))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Platforms) != 1 || d.Platforms[0].Platform != "linux/arm64" || len(d.Platforms[0].Layers) != 1 ||
		d.Platforms[0].Layers[0].Files[0].Path != "/etc/motd" {
		t.Errorf("want one differing platform, linux/arm64, naming /etc/motd: %+v", d)
	}
	if d, _ := CompareIndex(idx(amd, arm), idx(amd, arm)); !d.Empty() {
		t.Errorf("equal indexes differ: %+v", d)
	}
}

// The printed report of a tampered image, a changed label and an extra
// file, as a user reads it (golden file).
func TestReportGolden(t *testing.T) {
	img := honest().build(t)
	tampered := honest()
	tampered.layers[0][2] = file("etc/motd", "hacked!")
	tampered.layers[0] = append(tampered.layers[0], entry{name: "usr/bin/backdoor", typ: tar.TypeSymlink, link: "/tmp/x", mode: 0o777})
	tampered.labels = map[string]string{"kiln.dev/pool": "worker", "extra": "1"}
	d, err := Compare(img, tampered.build(t))
	if err != nil {
		t.Fatal(err)
	}
	rep := Report{}
	rep.add(Result{Image: "registry.example.com/kmod@sha256:" + strings.Repeat("1", 64), Kind: "kmod-sign",
		Rebuilt: "sha256:" + strings.Repeat("1", 64), Identical: true})
	rep.add(Result{Image: "registry.example.com/os@sha256:" + strings.Repeat("2", 64), Kind: "node-image",
		Rebuilt: "sha256:" + strings.Repeat("3", 64), Diff: &d})
	var out bytes.Buffer
	rep.WriteText(&out)
	fmt.Fprintf(&out, "summary: %s\n", rep.Summary(1024))
	golden.Check(t, filepath.Join("testdata", "report.txt"), out.Bytes())
	if rep.Reproduced {
		t.Error("a report with a different image says reproduced")
	}
}
