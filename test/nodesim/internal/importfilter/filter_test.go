package importfilter

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestNormalizeFollowsTheImportRules checks the path rules of the layer
// filter, one behaviour switch at a time.
func TestNormalizeFollowsTheImportRules(t *testing.T) {
	type result struct {
		Name string
		Keep bool
		Err  bool
	}
	for _, tc := range []struct {
		in   string
		cfg  Config
		want result
	}{
		{"usr/bin/x", Config{}, result{"./usr/bin/x", true, false}},
		{"/usr//bin/./x", Config{}, result{"./usr/bin/x", true, false}},
		{"./etc/motd", Config{}, result{"./usr/etc/motd", true, false}},
		{"etc", Config{}, result{"./usr/etc", true, false}},
		{"var/lib/x", Config{}, result{"./var/lib/x", true, false}},
		{"var/lib/x", Config{FactoryVar: true}, result{"./usr/share/factory/var/lib/x", true, false}},
		{"run", Config{}, result{"./run", true, false}},
		{"run/x/y", Config{}, result{"x", false, false}},
		{"dev/null", Config{AllowNonUsr: true}, result{"null", false, false}},
		{"opt/x", Config{}, result{"opt", false, false}},
		{"opt/x", Config{AllowNonUsr: true}, result{"./opt/x", true, false}},
		{"boot/vmlinuz", Config{}, result{"boot", false, false}},
		{"top-level", Config{}, result{"top-level", false, false}},
		{"home", Config{Base: true}, result{"./home", true, false}},
		{"etc/passwd", Config{Base: true}, result{"./usr/etc/passwd", true, false}},
		{"./", Config{}, result{"./", true, false}},
		{"usr/../../etc/shadow", Config{}, result{"", false, true}},
		{"usr/lib/\xff", Config{}, result{"", false, true}},
	} {
		name, keep, err := normalize(tc.in, tc.cfg)
		got := result{name, keep, err != nil}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("normalize(%q, %+v) (-want +got):\n%s", tc.in, tc.cfg, d)
		}
	}
}

// TestFilterLayerWritesLongNamesAsTheImportDoes checks that a long /etc
// name given in a PAX path record comes out moved to usr/etc (a GNU long
// name, as the tar crate writes) and, with the bypass, unmoved; a hard
// link into /etc is moved with it.
func TestFilterLayerWritesLongNamesAsTheImportDoes(t *testing.T) {
	long := reg(longEtcName, "x")
	long.hdr.Format = tar.FormatPAX
	in := tarBytes(t, long, hardlink("etc/alias", longEtcName))
	for _, tc := range []struct {
		cfg  Config
		want []string
	}{
		{Config{}, []string{"./usr/" + longEtcName, "./usr/etc/alias -> usr/" + longEtcName}},
		{Config{PAXPathBypass: true}, []string{longEtcName, "./usr/etc/alias -> usr/" + longEtcName}},
	} {
		var out bytes.Buffer
		if _, err := Filter(bytes.NewReader(in), &out, tc.cfg); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(tc.want, names(t, out.Bytes())); d != "" {
			t.Errorf("filtered names with %+v (-want +got):\n%s", tc.cfg, d)
		}
	}
}

var longEtcName = "etc/" + strings.Repeat("n", 120)

// member is one tar entry of a test layer.
type member struct {
	hdr  tar.Header
	data string
}

func reg(name, data string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}, data: data}
}

func dir(name string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

func hardlink(name, target string) member {
	return member{hdr: tar.Header{Name: name, Typeflag: tar.TypeLink, Linkname: target}}
}

func tarBytes(t testing.TB, ms ...member) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		h := m.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(m.data))
	}
	tw.Close()
	return buf.Bytes()
}

func names(t testing.TB, b []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		n := h.Name
		if h.Typeflag == tar.TypeLink {
			n += " -> " + h.Linkname
		}
		out = append(out, n)
	}
}

// FuzzFilterLayer feeds the filter arbitrary tar streams: it must not
// panic, and what it passes on to ostree must be a readable tar whose
// names are UTF-8, free of "..", and under a folder the import keeps.
func FuzzFilterLayer(f *testing.F) {
	f.Add(tarBytes(f, reg("etc/motd", "m"), dir("opt/"), reg("opt/x", "x"), reg("run/y", "y")))
	f.Add(tarBytes(f, hardlink("usr/b", "etc/a"), reg("var/lib/z", "z")))
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		if _, err := Filter(bytes.NewReader(in), &out, Config{MaxBytes: 1 << 20}); err != nil {
			return
		}
		tr := tar.NewReader(&out)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("the filter's output is not a readable tar: %v", err)
			}
			if !utf8.ValidString(h.Name) || strings.Contains("/"+h.Name+"/", "/../") {
				t.Fatalf("the filter passed on %q", h.Name)
			}
			first := strings.SplitN(strings.TrimPrefix(h.Name, "./"), "/", 2)
			switch {
			case h.Name == "./", first[0] == "usr", first[0] == "var":
			case apiFolders[first[0]] && len(first) == 1:
			default:
				t.Fatalf("the filter passed on %q, outside the folders the import keeps", h.Name)
			}
		}
	})
}
