package catalog

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// The label and annotations TEP-0003 (Tekton catalog organization), Tekton
// Hub and Artifact Hub read from a catalog resource.
const (
	LabelVersion          = "app.kubernetes.io/version"
	AnnotationMinVersion  = "tekton.dev/pipelines.minVersion"
	AnnotationCategories  = "tekton.dev/categories"
	AnnotationTags        = "tekton.dev/tags"
	AnnotationDisplayName = "tekton.dev/displayName"
	AnnotationPlatforms   = "tekton.dev/platforms"
)

// Categories is Tekton Hub's fixed category list (tektoncd/hub config.yaml);
// Artifact Hub shows the same names. A category outside it is dropped by
// the hubs, so the generator refuses it rather than publish it silently.
var Categories = []string{
	"Automation", "Build Tools", "CLI", "Cloud", "Code Quality", "Continuous Integration",
	"Deployment", "Developer Tools", "Image Build", "Integration & Delivery", "Git",
	"Kubernetes", "Messaging", "Monitoring", "Networking", "Openshift", "Publishing",
	"Security", "Storage", "Testing",
}

// Metadata is what the catalog publishes about a resource besides its spec.
type Metadata struct {
	Version     string   // app.kubernetes.io/version, the <version> directory
	MinVersion  string   // lowest Tekton Pipelines release the resource runs on
	DisplayName string   // name shown by the hubs and the Dashboard
	Categories  []string // from Categories
	Tags        []string // free-form search terms
	Platforms   []string // os/arch[/variant] the steps' images run on
}

// platformRE is one tekton.dev/platforms entry: an OCI platform as
// os/arch or os/arch/variant (linux/amd64, linux/arm64/v8), the form
// tektoncd/catalog's resources use and the image index's platform fields
// (https://github.com/opencontainers/image-spec/blob/main/image-index.md).
var platformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)

// PlatformRule is what CheckPlatform wants, for messages.
const PlatformRule = "want os/arch or os/arch/variant such as linux/amd64 or linux/arm64/v8"

// CheckPlatform checks one tekton.dev/platforms entry; the generator and
// the catalog's linter share it so they accept the same platforms. It
// returns "" or what is wrong.
func CheckPlatform(s string) string {
	if !platformRE.MatchString(s) {
		return PlatformRule
	}
	return ""
}

var (
	// TEP-0003 versions are <major>.<minor>: the directory is the version,
	// and patch-level fixes replace the file in place.
	versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	tagRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)
)

// ParseMetadata reads and checks the label and annotations of one resource.
// Every problem names the field; the caller prefixes the file and object.
func ParseMetadata(labels, annotations map[string]string) (Metadata, error) {
	var m Metadata
	var problems []string
	missing := func(field, why string) {
		problems = append(problems, fmt.Sprintf("%s is missing (%s)", field, why))
	}
	bad := func(field, value, why string) {
		problems = append(problems, fmt.Sprintf("%s %q: %s", field, value, why))
	}
	lf := func(k string) string { return fmt.Sprintf("metadata.labels[%q]", k) }
	af := func(k string) string { return fmt.Sprintf("metadata.annotations[%q]", k) }

	switch v, ok := labels[LabelVersion]; {
	case !ok || v == "":
		missing(lf(LabelVersion), "TEP-0003: it names the catalog's <version> directory")
	case !versionRE.MatchString(v):
		bad(lf(LabelVersion), v, "want <major>.<minor> as TEP-0003 versions are, e.g. 0.1")
	default:
		m.Version = v
	}
	switch v, ok := annotations[AnnotationMinVersion]; {
	case !ok || v == "":
		missing(af(AnnotationMinVersion), "TEP-0003: the lowest Tekton Pipelines release it runs on")
	default:
		if _, err := version.ParseSemantic(v); err != nil {
			bad(af(AnnotationMinVersion), v, "want a semantic version such as 0.56.0")
		} else {
			m.MinVersion = v
		}
	}
	switch v, ok := annotations[AnnotationDisplayName]; {
	case !ok || strings.TrimSpace(v) == "":
		missing(af(AnnotationDisplayName), "Tekton Hub and Artifact Hub show it as the title")
	default:
		m.DisplayName = strings.TrimSpace(v)
	}
	known := map[string]bool{}
	for _, c := range Categories {
		known[c] = true
	}
	list := func(key, why string, check func(string) string) []string {
		v, ok := annotations[key]
		if !ok || strings.TrimSpace(v) == "" {
			missing(af(key), why)
			return nil
		}
		var out []string
		seen := map[string]bool{}
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if reason := check(item); reason != "" {
				bad(af(key), item, reason)
				continue
			}
			if seen[item] {
				bad(af(key), item, "listed twice")
				continue
			}
			seen[item] = true
			out = append(out, item)
		}
		return out
	}
	m.Categories = list(AnnotationCategories, "Artifact Hub and Tekton Hub file the resource under it", func(s string) string {
		if !known[s] {
			return "not a Tekton Hub category (" + strings.Join(Categories, ", ") + ")"
		}
		return ""
	})
	m.Tags = list(AnnotationTags, "Artifact Hub and Tekton Hub search by them", func(s string) string {
		if !tagRE.MatchString(s) {
			return "want a lower-case word such as openshift"
		}
		return ""
	})
	m.Platforms = list(AnnotationPlatforms, "Artifact Hub shows where the steps' images run", func(s string) string {
		return CheckPlatform(s)
	})
	if len(problems) > 0 {
		sort.Strings(problems)
		return Metadata{}, fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return m, nil
}
