package imageref

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"go.podman.io/image/v5/docker/reference"
)

var hex64 = strings.Repeat("a", 64)

// Each parser accepts what both libraries accept and refuses, with a
// reason, what either refuses: the empty path component name lets
// through, the tag next to a digest containers/image refuses, a missing
// registry where a digest is required.
func TestParsersAcceptWhatBothLibrariesAccept(t *testing.T) {
	type verdict struct{ Digest, Ref, Repo bool }
	cases := []struct {
		in   string
		want verdict
	}{
		{"quay.io/org/os@sha256:" + hex64, verdict{true, true, false}},
		{"127.0.0.1:5000/test/os@sha256:" + hex64, verdict{true, true, false}},
		{"localhost:5000/os@sha256:" + hex64, verdict{true, true, false}},
		{"localhost/os@sha256:" + hex64, verdict{false, true, false}}, // name reads docker.io/localhost/os
		{"quay.io/org/os:v1", verdict{false, true, false}},
		{"quay.io/org/os", verdict{false, true, true}},
		{"busybox", verdict{false, true, true}},
		{"busybox@sha256:" + hex64, verdict{false, true, false}}, // no explicit registry
		{"a//b@sha256:" + hex64, verdict{false, false, false}},
		{"quay.io//os@sha256:" + hex64, verdict{false, false, false}},
		{"quay.io/os/@sha256:" + hex64, verdict{false, false, false}},
		{"quay.io/org/os:v1@sha256:" + hex64, verdict{false, true, false}}, // tag and digest
		{"quay.io/org/os@sha256:" + strings.Repeat("a", 63), verdict{false, false, false}},
		{"quay.io/org/os@sha256:" + strings.Repeat("A", 64), verdict{false, false, false}},
		{"quay.io/org/os@md5:" + strings.Repeat("a", 32), verdict{false, false, false}},
		{"quay.io/Org/os", verdict{false, false, false}},
		{"quay.io/org/os:$(id)", verdict{false, false, false}},
		{"quay.io/org/os\n@sha256:" + hex64, verdict{false, false, false}},
		{"", verdict{false, false, false}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			_, derr := ParseDigest(c.in)
			_, rerr := Parse(c.in)
			_, perr := ParseRepository(c.in)
			got := verdict{derr == nil, rerr == nil, perr == nil}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s\nerrors: %v | %v | %v", d, derr, rerr, perr)
			}
		})
	}
	if _, err := ParseDigest("quay.io/org/os:v1@sha256:" + hex64); err != ErrTagWithDigest {
		t.Errorf("tag and digest: %v, want ErrTagWithDigest", err)
	}
}

// FuzzParseDigest: whatever ParseDigest accepts, both libraries accept
// as a digest reference of 64 lowercase hex digits without a tag, and
// go-containerregistry gives it back unchanged.
func FuzzParseDigest(f *testing.F) {
	for _, s := range []string{"quay.io/org/os@sha256:" + hex64, "a//b@sha256:" + hex64, "quay.io/o:v@sha256:" + hex64, "", "@", "x@sha256:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDigest(s)
		if err != nil {
			return
		}
		if d.String() != s {
			t.Fatalf("ParseDigest(%q).String() = %q", s, d.String())
		}
		alg, hex, _ := strings.Cut(d.DigestStr(), ":")
		if alg != "sha256" || len(hex) != 64 || strings.Trim(hex, "0123456789abcdef") != "" {
			t.Fatalf("ParseDigest(%q): digest %q", s, d.DigestStr())
		}
		if _, err := name.NewDigest(s, name.StrictValidation); err != nil {
			t.Fatalf("accepted %q that name refuses: %v", s, err)
		}
		r, err := reference.ParseNamed(s)
		if err != nil {
			t.Fatalf("accepted %q that the distribution grammar refuses: %v", s, err)
		}
		if _, tagged := r.(reference.Tagged); tagged {
			t.Fatalf("accepted %q with a tag", s)
		}
		if _, err := Parse(s); err != nil {
			t.Fatalf("a digest reference %q that Parse refuses: %v", s, err)
		}
	})
}

// FuzzParse: whatever Parse or ParseRepository accepts, name accepts too.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"quay.io/org/os:v1", "busybox", "a//b", "quay.io/os/", "x:y:z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := Parse(s); err == nil {
			if _, err := name.ParseReference(s); err != nil {
				t.Fatalf("Parse accepted %q that name refuses: %v", s, err)
			}
		}
		if _, err := ParseRepository(s); err == nil {
			if _, err := name.NewRepository(s); err != nil || strings.ContainsAny(s, "@") {
				t.Fatalf("ParseRepository accepted %q: %v", s, err)
			}
		}
	})
}

// ParseRegistry takes a host[:port] and nothing else.
func TestParseRegistry(t *testing.T) {
	var got []string
	for _, h := range []string{"127.0.0.1:5000", "registry.example", "localhost:5000", "Quay.io", "", "a b", "host/path", "host:port", "quay.io:", "quay.io:5000/x"} {
		if _, err := ParseRegistry(h); err == nil {
			got = append(got, h)
		}
	}
	if d := cmp.Diff([]string{"127.0.0.1:5000", "registry.example", "localhost:5000", "Quay.io"}, got); d != "" {
		t.Errorf("accepted (-want +got):\n%s", d)
	}
}
