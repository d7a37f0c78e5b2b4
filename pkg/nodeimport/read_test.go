package nodeimport

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// gate is an event a layer's opener or reader waits for, failing after a
// timeout instead of hanging when it never comes.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }
func (g *gate) wait(what string) error {
	select {
	case <-g.ch:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("%s never happened: the layers are read one after the other", what)
	}
}

// closing is a layer whose Close opens a gate: its reader is done.
type closing struct {
	io.Reader
	done *gate
}

func (c closing) Close() error { c.done.open(); return nil }

// TestImportReadsLayersAtOnce opens three layers whose openers each wait
// until all three have been opened: read one after the other, the first
// never gets past its opener and the import fails; read at once, the
// image is imported whole.
func TestImportReadsLayersAtOnce(t *testing.T) {
	layers := [][]ent{kernel("k1"), {reg("usr/share/a", "a")}, {reg("usr/share/b", "b")}}
	var opened sync.WaitGroup
	opened.Add(len(layers))
	all := newGate()
	go func() { opened.Wait(); all.open() }()
	var rs []func() (io.ReadCloser, error)
	for _, l := range layers {
		raw := tarOf(t, l)
		rs = append(rs, func() (io.ReadCloser, error) {
			opened.Done()
			if err := all.wait("opening every layer"); err != nil {
				return nil, err
			}
			return opener(raw)()
		})
	}
	tree, fs, err := ImportTars(rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 0 {
		t.Errorf("findings: %v", fs)
	}
	if d := cmp.Diff([]string{"/usr/lib/modules/k1/vmlinuz", "/usr/share/a", "/usr/share/b"}, tree.Paths()); d != "" {
		t.Errorf("committed paths (-want +got):\n%s", d)
	}
}

// TestImportNoDigestsChangesOnlyTheDigests imports layers with hard links,
// whiteouts, a `..` entry and the files the lints read, with and without
// NoDigests: the findings and trees are the same but for the digests,
// which NoDigests leaves empty.
func TestImportNoDigestsChangesOnlyTheDigests(t *testing.T) {
	base := with(kernel("k1"), []ent{
		reg("etc/passwd", "root:x:0:0::/root:/bin/bash\nkiln:x:900:900::/:/sbin/nologin\n"),
		reg("usr/lib/sysusers.d/basic.conf", "u root 0 \"root\"\n"), reg("usr/share/a/one", "1"),
		reg("usr/bin/a", "tool"), hard("usr/bin/b", "usr/bin/a"), dir("var/lib/foo"), reg("opt/x", "o"),
	})
	upper := []ent{reg("usr/share/a/.wh..wh..opq", ""), reg("usr/share/a/two", "2"), reg("etc/motd", "hi"), reg("usr/../x", ""), reg("usr/after", "")}
	var rs []func() (io.ReadCloser, error)
	for _, l := range [][]ent{base, upper} {
		rs = append(rs, opener(tarOf(t, l)))
	}
	want, wantFs, err := ImportTars(rs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, gotFs, err := ImportTars(rs, Options{NoDigests: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantFs, gotFs); d != "" {
		t.Errorf("findings (-hashed +not hashed):\n%s", d)
	}
	if len(wantFs) == 0 {
		t.Errorf("the sample gave no findings; it should give some to compare")
	}
	noDigest := cmpopts.IgnoreFields(Entry{}, "Digest")
	if d := cmp.Diff(want, got, noDigest, cmp.AllowUnexported(Entry{})); d != "" {
		t.Errorf("trees (-hashed +not hashed):\n%s", d)
	}
	for p, e := range got.Image {
		if e.Digest != "" {
			t.Errorf("%s has digest %s with NoDigests", p, e.Digest)
		}
	}
	if e := want.Entries["/usr/bin/b"]; e.Digest != digestOf("tool") {
		t.Errorf("/usr/bin/b hashed as %q, want the content's digest", e.Digest)
	}
}

// TestImportLimitsCountLayersInOrder makes layer 1 read (or fail) first:
// the bottom layer's opener waits until it is done, so that layer 1 spends
// the read limits before the bottom layer is read. The result must still
// be the one of reading the layers in order: the limit passed where the
// layers in order pass it, or the lowest failing layer's own error.
func TestImportLimitsCountLayersInOrder(t *testing.T) {
	three := func(dir string) []ent {
		return []ent{reg(dir+"/a", "aaaa"), reg(dir+"/b", "bbbb"), reg(dir+"/c", "cccc")}
	}
	cases := []struct {
		name    string
		opts    Options
		failOne bool // layer 1's opener fails
		want    string
		paths   int
	}{
		{"entries pass the limit in layer 1", Options{MaxEntries: 4}, false, "reading layer 1: image exceeds the import's read limit: more than 4 entries", 0},
		{"bytes pass the limit in layer 1", Options{MaxBytes: 16}, false, "reading layer 1: image exceeds the import's read limit: more than 16 bytes", 0},
		{"layer 1 fails before any limit", Options{MaxEntries: 4}, true, "opening layer 1: no such layer", 0},
		{"within the limits", Options{MaxEntries: 6, MaxBytes: 24}, false, "", 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			upperDone := newGate()
			bottom, upper := tarOf(t, three("usr/share/bottom")), tarOf(t, three("usr/share/upper"))
			rs := []func() (io.ReadCloser, error){
				func() (io.ReadCloser, error) {
					if err := upperDone.wait("reading the upper layer"); err != nil {
						return nil, err
					}
					return opener(bottom)()
				},
				func() (io.ReadCloser, error) {
					if c.failOne {
						defer upperDone.open()
						return nil, errors.New("no such layer")
					}
					return closing{strings.NewReader(string(upper)), upperDone}, nil
				},
			}
			if c.failOne {
				// Above the failed layer: never merged, so it may be left unread.
				rs = append(rs, opener(upper))
			}
			tree, _, err := ImportTars(rs, c.opts)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != c.want {
				t.Fatalf("error %q, want %q", got, c.want)
			}
			if c.want != "" && !c.failOne && !errors.Is(err, ErrTooLarge) {
				t.Errorf("error %v is not ErrTooLarge", err)
			}
			if tree != nil && len(tree.Image) != c.paths {
				t.Errorf("%d image paths, want %d", len(tree.Image), c.paths)
			}
		})
	}
}
