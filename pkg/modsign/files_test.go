package modsign

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestExpandFilesToSign(t *testing.T) {
	const kver = "5.14.0-427.13.1.el9_4.x86_64"
	fsys := fstest.MapFS{
		"opt/lib/modules/" + kver + "/kmm_ci_a.ko":        {Data: []byte("a")},
		"opt/lib/modules/" + kver + "/kmm_ci_b.ko":        {Data: []byte("b")},
		"opt/lib/modules/" + kver + "/extra/kmm_ci_c.ko":  {Data: []byte("c")},
		"opt/lib/modules/" + kver + "/modules.dep":        {Data: []byte("")},
		"opt/lib/modules/6.0.0/kmm_ci_a.ko":               {Data: []byte("old")},
		"opt/lib/modules/" + kver + "/dir.ko/placeholder": {Data: []byte("")},
	}
	dir := "/opt/lib/modules/" + kver
	cases := []struct {
		name     string
		patterns []string
		want     []string
		wantErr  string
	}{
		{"day-0 proposal example", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_a.ko"}, []string{dir + "/kmm_ci_a.ko"}, ""},
		{"glob", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"}, []string{dir + "/kmm_ci_a.ko", dir + "/kmm_ci_b.ko"}, ""},
		{"nested glob and duplicates", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*/*.ko", "/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_?.ko", dir + "/kmm_ci_a.ko"},
			[]string{dir + "/extra/kmm_ci_c.ko", dir + "/kmm_ci_a.ko", dir + "/kmm_ci_b.ko"}, ""},
		{"glob matching nothing", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/nope*.ko"}, nil,
			`spec.osMapping.sign.filesToSign[0] "/opt/lib/modules/${KERNEL_FULL_VERSION}/nope*.ko": matches no file in the image (as "` + dir + `/nope*.ko")`},
		{"relative", []string{"lib/x.ko"}, nil, `spec.osMapping.sign.filesToSign[0] "lib/x.ko": not an absolute path`},
		{"other variable", []string{"/opt/${KERNEL_VERSION}/x.ko"}, nil, "only ${KERNEL_FULL_VERSION} may be substituted"},
		{"bad glob", []string{"/opt/[.ko"}, nil, "syntax error in pattern"},
		{"empty list refused", []string{}, nil, "spec.osMapping.sign.filesToSign: empty"},
		{"nil list refused", nil, nil, "spec.osMapping.sign.filesToSign: empty"},
		{"second pattern matching nothing names it", []string{dir + "/kmm_ci_a.ko", "/opt/lib/modules/${KERNEL_FULL_VERSION}/missing.ko"}, nil,
			`spec.osMapping.sign.filesToSign[1] "/opt/lib/modules/${KERNEL_FULL_VERSION}/missing.ko": matches no file in the image`},
		{"directory matched by a glob is no file", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/dir.ko"}, nil, "matches no file in the image"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExpandFilesToSign(fsys, tc.patterns, kver)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want error %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}
