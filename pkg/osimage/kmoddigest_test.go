package osimage

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// --kmod-digest is refused before any I/O unless it is a sha256 digest.
func TestKmodDigestFlagMustBeASha256Digest(t *testing.T) {
	good := "sha256:" + strings.Repeat("a", 64)
	for _, d := range []string{"latest", "sha256:abc", "sha512:" + strings.Repeat("a", 128), "sha256:" + strings.Repeat("A", 64), good + ";$(id)"} {
		o := DefaultBuildOptions()
		o.Pool, o.Work, o.ResultsDir, o.Base, o.Repository, o.KmodDigests = "worker", t.TempDir(), t.TempDir(), "r.io/os:1", "r.io/kiln/os", []string{d}
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), "--kmod-digest \""+d+"\": want sha256:<64 hex digits>") {
			t.Errorf("--kmod-digest %q: error %v", d, err)
		}
	}
	o := DefaultBuildOptions()
	o.Pool, o.Work, o.ResultsDir, o.Base, o.Repository, o.KmodDigests = "worker", t.TempDir(), t.TempDir(), "r.io/os:1", "r.io/kiln/os", []string{good}
	if err := o.Validate(); err != nil {
		t.Errorf("--kmod-digest %s: %v", good, err)
	}
}

// A --kmod-digest must be the digest the work folder's kmod report
// records; the report's image must carry that digest.
func TestKmodDigestMustBeRecordedInTheWorkFolder(t *testing.T) {
	a, b := "sha256:"+strings.Repeat("a", 64), "sha256:"+strings.Repeat("b", 64)
	report := func(image, digest string) string { return `{"image":"` + image + `","digest":"` + digest + `"}` }
	cases := []struct {
		name    string
		report  string // kmod/sign.json; "" for none
		given   []string
		wantErr string
		want    []string // KmodDigests after kmodBase
	}{
		{"no flag, no report", "", nil, "", nil},
		{"no flag, a report", report("r.io/kmod@"+a, a), nil, "", []string{a}},
		{"the recorded digest", report("r.io/kmod@"+a, a), []string{a}, "", []string{a}},
		{"a digest the report does not record", report("r.io/kmod@"+a, a), []string{b}, "--kmod-digest " + b + ": the work folder's kmod image is " + a, nil},
		{"a digest with no report", "", []string{a}, "--kmod-digest " + a + ": no kmod image is recorded in the work folder", nil},
		{"a report whose image has another digest", report("r.io/kmod@"+b, a), nil, "the work folder's kmod report: image", nil},
		{"a report whose image is a tag", report("r.io/kmod:1", a), nil, "want repository@sha256:", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			if c.report != "" {
				if err := os.MkdirAll(filepath.Join(work, "kmod"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(work, "kmod", "sign.json"), []byte(c.report), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			o := DefaultBuildOptions()
			o.Pool, o.Base, o.KmodDigests = "worker", "r.io/os:1", c.given
			err := o.kmodBase(workspace.Workspace{Root: work}, step.NewProgress(&strings.Builder{}, workspace.StageImageBuild))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, o.KmodDigests); diff != "" {
				t.Errorf("kmod digests (-want +got):\n%s", diff)
			}
		})
	}
}
