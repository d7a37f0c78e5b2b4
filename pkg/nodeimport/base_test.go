package nodeimport

import (
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// importResult is everything an import returns, for comparisons.
type importResult struct {
	Tree     *Tree
	Findings []Finding
	Err      string
}

var cmpEntries = cmp.AllowUnexported(Entry{})

func full(t *testing.T, layers [][]ent, opts Options) importResult {
	t.Helper()
	tree, fs, err := ImportTars(openers(t, layers), opts)
	return importResult{tree, fs, fmt.Sprint(err)}
}

func openers(t *testing.T, layers [][]ent) []func() (io.ReadCloser, error) {
	var rs []func() (io.ReadCloser, error)
	for _, l := range layers {
		rs = append(rs, opener(tarOf(t, l)))
	}
	return rs
}

// resumed reads layers[:k] as a base, round-trips it through its encoding
// when encode is set, and imports layers[k:] on it.
func resumed(t *testing.T, layers [][]ent, k int, opts Options, encode bool) importResult {
	t.Helper()
	rs := openers(t, layers)
	b, err := ReadBase(rs[:k], opts)
	if err != nil {
		return importResult{Err: fmt.Sprint(err)}
	}
	if encode {
		raw, err := b.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if b, err = UnmarshalBase(raw); err != nil {
			t.Fatalf("decoding the base just encoded: %v", err)
		}
	}
	tree, fs, err := b.Import(rs[k:])
	return importResult{tree, fs, fmt.Sprint(err)}
}

// assertResumeSame imports layers whole and resumed from every split
// point, with and without the encoding, and wants identical trees,
// findings (rules, paths, layers, messages, order) and errors.
func assertResumeSame(t *testing.T, layers [][]ent, opts Options) {
	t.Helper()
	want := full(t, layers, opts)
	for k := 1; k < len(layers); k++ {
		for _, encode := range []bool{false, true} {
			got := resumed(t, layers, k, opts, encode)
			if d := cmp.Diff(want, got, cmpEntries); d != "" {
				t.Errorf("base of %d of %d layers (encoded %v): import differs from a full read (-full +resumed):\n%s", k, len(layers), encode, d)
			}
		}
	}
}

// TestBaseImportEqualsFullReadPerRule: every per-rule case, resumed on its
// base, gives the full read's tree and findings.
func TestBaseImportEqualsFullReadPerRule(t *testing.T) {
	for _, c := range perRuleCases() {
		t.Run(c.name, func(t *testing.T) {
			assertResumeSame(t, [][]ent{perRuleBase(), c.layer}, Options{})
		})
	}
}

// TestBaseImportEqualsFullReadAcrossLayers: upper layers that reach into
// the base (whiteouts, an opaque folder, a second kernel, a hard link
// into a base file, a file replacing a base folder), over bases of one
// to three layers, under each option that changes the import.
func TestBaseImportEqualsFullReadAcrossLayers(t *testing.T) {
	base0 := with(kernel("k1"), []ent{
		dir("usr/share/a"), reg("usr/share/a/one", "1"), reg("usr/share/a/two", "2"), reg("etc/gone.conf", "g"),
		reg("etc/passwd", "root:x:0:0::/root:/bin/bash\ncore:x:1000:1000::/:/bin/sh\n"),
		reg("usr/lib/sysusers.d/basic.conf", "u root 0 \"root\"\n"), dir("var/lib/kept"),
		reg("usr/lib/ostree/prepare-root.conf", "[composefs]\nenabled = true\n"), reg("opt/tool", "t"),
	})
	base1 := []ent{reg("usr/share/b/three", "3"), dir("usr/share/c"), reg("usr/share/c/x", "x"), reg("run/stale", "")}
	base2 := []ent{reg("usr/lib/tmpfiles.d/kept.conf", "d /var/lib/kept 0755 root root -\n"), reg("usr/bin/tool", "bin")}
	cases := []struct {
		name  string
		upper [][]ent
	}{
		{"whiteout of base files", [][]ent{{reg("etc/.wh.gone.conf", ""), reg("usr/share/a/.wh.one", "")}}},
		{"opaque whiteout of a base folder", [][]ent{{dir("usr/share/a"), reg("usr/share/a/.wh..wh..opq", ""), reg("usr/share/a/new", "n")}}},
		{"second kernel", [][]ent{kernel("k2")}},
		{"kernel removed", [][]ent{{reg("usr/lib/modules/k1/.wh.vmlinuz", "")}}},
		{"hard link into the base", [][]ent{{hard("usr/bin/shadow", "etc/passwd")}}},
		{"file replaces a base folder", [][]ent{{reg("usr/share/c", "now a file")}}},
		{"sysusers and tmpfiles of the base read", [][]ent{{reg("etc/passwd", "root:x:0:0::/root:/bin/bash\nnew:x:9:9::/:/bin/sh\n"), dir("var/lib/other")}}},
		{"two layers above", [][]ent{{reg("etc/a", "a"), hard("etc/b", "etc/a")}, {reg("etc/.wh.a", ""), reg("usr/share/b/.wh..wh..opq", "")}}},
	}
	for _, c := range cases {
		for _, opts := range []Options{{}, {NoDigests: true}, {FactoryVar: true, NonUsr: NonUsrDrop}, {NonUsr: NonUsrKeep}} {
			t.Run(fmt.Sprintf("%s/%+v", c.name, opts), func(t *testing.T) {
				assertResumeSame(t, append([][]ent{base0, base1, base2}, c.upper...), opts)
			})
		}
	}
}

// TestBaseImportKeepsTheLimits: the read limits count the base's entries
// and bytes, so a layer above that passes them fails as in a full read,
// and a base that passes them fails to read with the full read's error.
func TestBaseImportKeepsTheLimits(t *testing.T) {
	layers := [][]ent{with(kernel("k1"), []ent{reg("usr/a", "aaaa")}), {reg("usr/b", "bb"), reg("usr/c", "c")}}
	for _, opts := range []Options{{MaxEntries: 3}, {MaxBytes: 12}, {MaxEntries: 1}, {MaxBytes: 4}} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			want := full(t, layers, opts)
			if !strings.Contains(want.Err, ErrTooLarge.Error()) {
				t.Fatalf("the full read passed the limits %+v: %s", opts, want.Err)
			}
			got := resumed(t, layers, 1, opts, true)
			if d := cmp.Diff(want, got, cmpEntries); d != "" {
				t.Errorf("(-full +resumed):\n%s", d)
			}
		})
	}
}

// TestUnmarshalBaseRefusesDamage: each damaged encoding is an error,
// never a base.
func TestUnmarshalBaseRefusesDamage(t *testing.T) {
	b, err := ReadBase(openers(t, [][]ent{with(kernel("k1"), []ent{reg("etc/passwd", "root:x:0:0::/:/bin/sh\n")})}), Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"empty":           nil,
		"other format":    append([]byte("kiln-nodeimport-base/0\n"), raw[len(baseMagic):]...),
		"truncated":       raw[:len(raw)-1],
		"trailing byte":   append(append([]byte(nil), raw...), 0),
		"only the header": []byte(baseMagic),
	}
	for name, in := range cases {
		if _, err := UnmarshalBase(in); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
