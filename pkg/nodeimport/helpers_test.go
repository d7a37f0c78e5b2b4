package nodeimport

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"path"
	"slices"
	"testing"
)

// ent is one hand-made tar entry.
type ent struct {
	name, link, body string
	typ              byte
	mode             int64
	uid, gid         int
	format           tar.Format
}

func reg(name, body string) ent { return ent{name: name, body: body, typ: tar.TypeReg, mode: 0o644} }
func dir(name string) ent       { return ent{name: name, typ: tar.TypeDir, mode: 0o755} }
func sym(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeSymlink, mode: 0o777}
}
func hard(name, target string) ent {
	return ent{name: name, link: target, typ: tar.TypeLink, mode: 0o644}
}
func typed(name string, t byte) ent { return ent{name: name, typ: t, mode: 0o644} }
func kernel(kver string) []ent      { return []ent{reg("usr/lib/modules/"+kver+"/vmlinuz", "kernel "+kver)} }
func with(es ...[]ent) []ent {
	var out []ent
	for _, e := range es {
		out = append(out, e...)
	}
	return out
}

// tarOf writes entries as a tar stream. Entries are written in the format
// they name (USTAR/GNU/PAX) or Go's choice; raw names are kept as given.
func tarOf(t testing.TB, es []ent) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Uid: e.uid, Gid: e.gid, Format: e.format}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if e.typ == tar.TypeXGlobalHeader {
			h.PAXRecords, h.Mode = map[string]string{"comment": "git archive"}, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("writing %q: %v", e.name, err)
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
	return buf.Bytes()
}

func opener(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// importLayers imports hand-made layers, bottom first.
func importLayers(t testing.TB, opts Options, layers ...[]ent) (*Tree, []Finding) {
	t.Helper()
	var rs []func() (io.ReadCloser, error)
	for _, l := range layers {
		rs = append(rs, opener(tarOf(t, l)))
	}
	tree, fs, err := ImportTars(rs, opts)
	if err != nil {
		t.Fatalf("importing: %v", err)
	}
	return tree, fs
}

// brief is a finding without its message, for comparisons.
type brief struct {
	Rule     string
	Severity Severity
	Path     string
}

func briefs(fs []Finding) []brief {
	out := []brief{}
	for _, f := range fs {
		out = append(out, brief{f.Rule, f.Severity, f.Path})
	}
	return out
}

func parentDir(p string) string { return path.Dir(p) }

func sortStrings(s []string) []string { slices.Sort(s); return s }

func digestOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(h[:])
}
