package nodeimport

import (
	"archive/tar"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzImportTar feeds arbitrary bytes as a layer on a valid base: the
// import returns findings or an error, never panics, every committed
// path is absolute, clean and UTF-8, and NoDigests gives the same
// findings or error.
func FuzzImportTar(f *testing.F) {
	f.Add(tarOf(f, []ent{reg("etc/a", "x"), hard("etc/b", "etc/a"), sym("usr/l", "../x")}))
	f.Add(tarOf(f, []ent{{name: "etc/" + strings.Repeat("x", 150), typ: tar.TypeReg, format: tar.FormatPAX}}))
	f.Add(tarOf(f, []ent{reg("usr/.wh..wh..opq", ""), reg("usr/../../x", "")}))
	f.Add([]byte("not a tar"))
	base := tarOf(f, with(kernel("k1"), []ent{reg("usr/bin/true", "")}))
	f.Fuzz(func(t *testing.T, layer []byte) {
		layers := []func() (io.ReadCloser, error){opener(base), opener(layer)}
		tree, fs, err := ImportTars(layers, Options{MaxBytes: 1 << 20, MaxEntries: 1000})
		_, fast, ferr := ImportTars(layers, Options{MaxBytes: 1 << 20, MaxEntries: 1000, NoDigests: true})
		if fmt.Sprint(err) != fmt.Sprint(ferr) || !slices.Equal(fs, fast) {
			t.Errorf("NoDigests changed the outcome: %v, %v; without it %v, %v", fast, ferr, fs, err)
		}
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
