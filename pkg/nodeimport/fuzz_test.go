package nodeimport

import (
	"archive/tar"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzImportTar feeds arbitrary bytes as a layer on a valid base: the
// import returns findings or an error, never panics, and every committed
// path is absolute, clean and UTF-8.
func FuzzImportTar(f *testing.F) {
	f.Add(tarOf(f, []ent{reg("etc/a", "x"), hard("etc/b", "etc/a"), sym("usr/l", "../x")}))
	f.Add(tarOf(f, []ent{{name: "etc/" + strings.Repeat("x", 150), typ: tar.TypeReg, format: tar.FormatPAX}}))
	f.Add(tarOf(f, []ent{reg("usr/.wh..wh..opq", ""), reg("usr/../../x", "")}))
	f.Add([]byte("not a tar"))
	base := tarOf(f, with(kernel("k1"), []ent{reg("usr/bin/true", "")}))
	f.Fuzz(func(t *testing.T, layer []byte) {
		tree, _, err := ImportTars([]func() (io.ReadCloser, error){opener(base), opener(layer)}, Options{MaxBytes: 1 << 20, MaxEntries: 1000})
		if err != nil {
			return
		}
		for p := range tree.Entries {
			if !strings.HasPrefix(p, "/") || p == "/" || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") || strings.Contains(p, "//") || !utf8.ValidString(p) {
				t.Errorf("committed path %q is not a clean absolute path", p)
			}
		}
	})
}
