package catalog

import "testing"

// TestCheckPlatform: one tekton.dev/platforms entry is os/arch or
// os/arch/variant (linux/arm64/v8 included); anything else names the rule.
func TestCheckPlatform(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"linux/amd64", ""},
		{"linux/arm64", ""},
		{"linux/arm64/v8", ""},
		{"linux/arm/v7", ""},
		{"linux/ppc64le", ""},
		{"amd64", PlatformRule},
		{"linux/arm/v7/extra", PlatformRule},
		{"Linux/AMD64", PlatformRule},
		{"linux/amd64 ", PlatformRule},
		{"", PlatformRule},
	} {
		if got := CheckPlatform(tc.in); got != tc.want {
			t.Errorf("CheckPlatform(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestParseMetadataAcceptsVariant: the generator takes linux/arm64/v8.
func TestParseMetadataAcceptsVariant(t *testing.T) {
	m, err := ParseMetadata(map[string]string{LabelVersion: "0.1"}, map[string]string{
		AnnotationMinVersion:  "1.10.0",
		AnnotationCategories:  "Build Tools",
		AnnotationTags:        "openshift",
		AnnotationDisplayName: "demo",
		AnnotationPlatforms:   "linux/amd64,linux/arm64/v8",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Platforms) != 2 || m.Platforms[1] != "linux/arm64/v8" {
		t.Errorf("platforms %q, want linux/amd64 and linux/arm64/v8", m.Platforms)
	}
}
