package nodecache

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

type result struct {
	Tree     *nodeimport.Tree
	Findings []nodeimport.Finding
	Err      string
}

var cmpEntries = cmp.AllowUnexported(nodeimport.Entry{})

func fullRead(t *testing.T, img v1.Image, opts nodeimport.Options) result {
	t.Helper()
	tree, fs, err := nodeimport.Import(img, opts)
	return result{tree, fs, fmt.Sprint(err)}
}

func cachedRead(t *testing.T, c *Cache, img v1.Image, base int, opts nodeimport.Options) result {
	t.Helper()
	tree, fs, err := c.Import(img, base, opts)
	return result{tree, fs, fmt.Sprint(err)}
}

// baseLayers is a two-layer base whose files the cases' layers reach.
func baseLayers(t testing.TB) []v1.Layer {
	return []v1.Layer{
		layerOf(t, kernelFile("k1"), file{name: "usr/share/a/", typ: tar.TypeDir}, file{name: "usr/share/a/one", body: "1"},
			file{name: "etc/passwd", body: "root:x:0:0::/root:/bin/bash\ncore:x:1000:1000::/:/bin/sh\n"},
			file{name: "usr/lib/sysusers.d/basic.conf", body: "u root 0 \"root\"\n"}, file{name: "opt/tool", body: "t"}),
		layerOf(t, file{name: "etc/gone.conf", body: "g"}, file{name: "usr/lib/tmpfiles.d/x.conf", body: "d /var/lib/x - - - -\n"},
			file{name: "var/lib/x/", typ: tar.TypeDir}),
	}
}

// upperCases are layers above baseLayers, from a clean config layer to
// ones that remove, replace or link to the base's files.
func upperCases(t testing.TB) map[string][]v1.Layer {
	return map[string][]v1.Layer{
		"config only":           {layerOf(t, file{name: "etc/motd", body: "hi\n"})},
		"whiteout of base file": {layerOf(t, file{name: "etc/.wh.gone.conf"}, file{name: "usr/share/a/.wh.one"})},
		"opaque base folder":    {layerOf(t, file{name: "usr/share/a/", typ: tar.TypeDir}, file{name: "usr/share/a/.wh..wh..opq"}, file{name: "usr/share/a/new", body: "n"})},
		"second kernel":         {layerOf(t, kernelFile("k2"))},
		"hard link into base":   {layerOf(t, file{name: "usr/bin/pw", typ: tar.TypeLink, link: "etc/passwd"})},
		"user without sysusers": {layerOf(t, file{name: "etc/passwd", body: "root:x:0:0::/root:/bin/bash\nnew:x:9:9::/:/bin/sh\n"})},
		"fifo and a user Containerfile layer": {
			layerOf(t, file{name: "usr/share/fifo", typ: tar.TypeFifo}), layerOf(t, file{name: "var/lib/y/", typ: tar.TypeDir}),
		},
	}
}

// TestCachedImportEqualsFullRead: for each case, the first import on a
// base (which fills the cache) and the second (which reads the entry and
// none of the base's layers) give the tree, findings and error of
// nodeimport.Import reading the whole image.
func TestCachedImportEqualsFullRead(t *testing.T) {
	for name, upper := range upperCases(t) {
		for _, opts := range []nodeimport.Options{{NoDigests: true}, {}, {FactoryVar: true, NonUsr: nodeimport.NonUsrKeep}} {
			t.Run(fmt.Sprintf("%s/%+v", name, opts), func(t *testing.T) {
				var reads atomic.Int64
				var base []v1.Layer
				for _, l := range baseLayers(t) {
					base = append(base, counted{l, &reads})
				}
				img := imageOf(t, append(base, upper...)...)
				want := fullRead(t, img, opts)
				var warnings bytes.Buffer
				c := &Cache{Dir: t.TempDir(), Warnings: &warnings}
				if d := cmp.Diff(want, cachedRead(t, c, img, len(base), opts), cmpEntries); d != "" {
					t.Errorf("first (filling) import differs from a full read (-full +cached):\n%s", d)
				}
				reads.Store(0)
				if d := cmp.Diff(want, cachedRead(t, c, img, len(base), opts), cmpEntries); d != "" {
					t.Errorf("second (cached) import differs from a full read (-full +cached):\n%s", d)
				}
				if n := reads.Load(); n != 0 {
					t.Errorf("the second import read the base's layers %d times; want none", n)
				}
				if warnings.Len() > 0 {
					t.Errorf("warnings: %s", warnings.String())
				}
			})
		}
	}
}

// TestBadEntriesAreIgnoredAndRewritten: a damaged entry, one of another
// key, one of another rules version or format, and one that is not a
// regular file each give a full read with the same findings, a warning
// naming the entry, and (except the folder) a rewritten entry the next
// import uses.
func TestBadEntriesAreIgnoredAndRewritten(t *testing.T) {
	base := baseLayers(t)
	img := imageOf(t, append(base, upperCases(t)["second kernel"]...)...)
	opts := nodeimport.Options{NoDigests: true}
	want := fullRead(t, img, opts)
	key, err := Key(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nodeimport.ReadBase(uncompressed(base), opts)
	if err != nil {
		t.Fatal(err)
	}
	good, err := encodeEntry(nodeimport.RulesVersion, key, b)
	if err != nil {
		t.Fatal(err)
	}
	otherKey, _ := encodeEntry(nodeimport.RulesVersion, strings.Repeat("0", 64), b)
	otherRules, _ := encodeEntry("kiln-nodeimport/0", key, b)
	cases := map[string][]byte{
		"garbage":      []byte("not an entry"),
		"truncated":    good[:len(good)-3],
		"other key":    otherKey,
		"other rules":  otherRules,
		"other format": append([]byte("kiln-nodecache/0"), good[len(Format):]...),
		"flipped byte": flip(good, len(good)-10),
		"empty":        {},
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			entry := filepath.Join(dir, folder, key)
			if err := os.MkdirAll(filepath.Dir(entry), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(entry, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			var warnings bytes.Buffer
			c := &Cache{Dir: dir, Warnings: &warnings}
			if d := cmp.Diff(want, cachedRead(t, c, img, len(base), opts), cmpEntries); d != "" {
				t.Errorf("import over a bad entry differs from a full read (-full +cached):\n%s", d)
			}
			if !strings.Contains(warnings.String(), "ignoring entry "+key) {
				t.Errorf("warnings %q do not name the ignored entry", warnings.String())
			}
			if got, err := os.ReadFile(entry); err != nil || !bytes.Equal(got, good) {
				t.Errorf("the entry was not rewritten: %d bytes, %v", len(got), err)
			}
		})
	}
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0xff
	return out
}

// TestUnusableCacheFolderStillImports: a cache folder that is a file, an
// entry that is a folder or a FIFO, and a cache subfolder that is a
// symlink out of the cache give the full read's findings with a warning,
// and nothing is written outside the cache folder.
func TestUnusableCacheFolderStillImports(t *testing.T) {
	base := baseLayers(t)
	img := imageOf(t, append(base, upperCases(t)["config only"]...)...)
	opts := nodeimport.Options{NoDigests: true}
	want := fullRead(t, img, opts)
	key, err := Key(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	cases := map[string]func(dir string) error{
		"cache folder is a file": func(dir string) error { return os.WriteFile(filepath.Join(dir, "cache"), nil, 0o644) },
		"entry is a folder":      func(dir string) error { return os.MkdirAll(filepath.Join(dir, "cache", folder, key), 0o755) },
		"subfolder links out": func(dir string) error {
			if err := os.Mkdir(filepath.Join(dir, "cache"), 0o755); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(dir, "cache", folder))
		},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := setup(dir); err != nil {
				t.Fatal(err)
			}
			var warnings bytes.Buffer
			c := &Cache{Dir: filepath.Join(dir, "cache"), Warnings: &warnings}
			if d := cmp.Diff(want, cachedRead(t, c, img, len(base), opts), cmpEntries); d != "" {
				t.Errorf("(-full +cached):\n%s", d)
			}
			if !strings.Contains(warnings.String(), "warning: node import cache") {
				t.Errorf("no warning: %q", warnings.String())
			}
			if ents, _ := os.ReadDir(outside); len(ents) > 0 {
				t.Errorf("wrote %s outside the cache folder", ents[0].Name())
			}
		})
	}
}

// lyingLayer claims a diffID its content does not hash to.
type lyingLayer struct{ v1.Layer }

func (lyingLayer) DiffID() (v1.Hash, error) {
	return v1.NewHash("sha256:" + strings.Repeat("ab", 32))
}

// TestLayerFailingItsDiffIDIsNotStored: a base layer whose content does
// not hash to its diffID gives the full read's findings, a warning, and
// no entry.
func TestLayerFailingItsDiffIDIsNotStored(t *testing.T) {
	base := baseLayers(t)
	base[1] = lyingLayer{base[1]}
	img := imageOf(t, append(base, upperCases(t)["config only"]...)...)
	opts := nodeimport.Options{NoDigests: true}
	want := fullRead(t, img, opts)
	var warnings bytes.Buffer
	c := &Cache{Dir: t.TempDir(), Warnings: &warnings}
	if d := cmp.Diff(want, cachedRead(t, c, img, len(base), opts), cmpEntries); d != "" {
		t.Errorf("(-full +cached):\n%s", d)
	}
	if !strings.Contains(warnings.String(), "layer 1: content hashes to") {
		t.Errorf("warnings %q do not say which layer failed its diffID", warnings.String())
	}
	if ents, _ := os.ReadDir(filepath.Join(c.Dir, folder)); len(ents) > 0 {
		t.Errorf("stored %s from an unverified read", ents[0].Name())
	}
}

// TestKeyNamesEveryInput: the key changes with each layer's digest, the
// layers' order, and the options.
func TestKeyNamesEveryInput(t *testing.T) {
	a, b := layerOf(t, file{name: "a", body: "a"}), layerOf(t, file{name: "b", body: "b"})
	keys := map[string]string{}
	for name, in := range map[string]struct {
		layers []v1.Layer
		opts   nodeimport.Options
	}{
		"a b": {[]v1.Layer{a, b}, nodeimport.Options{}}, "b a": {[]v1.Layer{b, a}, nodeimport.Options{}},
		"a": {[]v1.Layer{a}, nodeimport.Options{}}, "a b no digests": {[]v1.Layer{a, b}, nodeimport.Options{NoDigests: true}},
		"a b factory var": {[]v1.Layer{a, b}, nodeimport.Options{FactoryVar: true}},
	} {
		k, err := Key(in.layers, in.opts)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := keys[k]; dup {
			t.Errorf("%s and %s share key %s", name, other, k)
		}
		keys[k] = name
	}
}
