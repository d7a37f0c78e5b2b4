package payload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rel is release v of the test payload repository, its image digest made
// from the version so every release has its own.
func rel(v string) configv1.Release {
	return configv1.Release{Version: v, Image: releaseDigestRef(v)}
}

func releaseDigestRef(v string) string {
	return fmt.Sprintf("quay.io/openshift-release-dev/ocp-release@sha256:%064x", []byte(strings.ReplaceAll(v, ".", "")))
}

func conditional(v string, recommended metav1.ConditionStatus) configv1.ConditionalUpdate {
	return configv1.ConditionalUpdate{Release: rel(v), Conditions: []metav1.Condition{{Type: conditionRecommended, Status: recommended}}}
}

func offeringClusterVersion(current string, avail []configv1.Release, cond []configv1.ConditionalUpdate, desired *configv1.Update) *configv1.ClusterVersion {
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: ClusterVersionName}}
	cv.Spec.DesiredUpdate = desired
	cv.Status.Desired = rel(current)
	cv.Status.AvailableUpdates = avail
	cv.Status.ConditionalUpdates = cond
	return cv
}

func target(v string, why ...string) Target {
	return Target{Version: v, Image: releaseDigestRef(v), Why: why}
}

func TestSelectTargets(t *testing.T) {
	avail := []configv1.Release{rel("4.18.3"), rel("4.18.5"), rel("4.18.4"), rel("4.19.1"), rel("4.19.0"), rel("4.18.1")}
	for _, tc := range []struct {
		name        string
		cv          *configv1.ClusterVersion
		sel         Selection
		want        []Target
		wantSkipped []string // reasons
	}{
		{name: "no ClusterVersion selects nothing", sel: DefaultSelection},
		{name: "no available update selects nothing", cv: offeringClusterVersion("4.18.2", nil, nil, nil), sel: DefaultSelection},
		{name: "default: the newest z-stream of the running minor and the newest y-stream",
			cv: offeringClusterVersion("4.18.2", avail, nil, nil), sel: DefaultSelection,
			want: []Target{target("4.18.5", SelectZStream), target("4.19.1", SelectYStream)}},
		{name: "z-stream only", cv: offeringClusterVersion("4.18.2", avail, nil, nil), sel: Selection{ZStream: true},
			want: []Target{target("4.18.5", SelectZStream)}},
		{name: "y-stream only", cv: offeringClusterVersion("4.18.2", avail, nil, nil), sel: Selection{YStream: true},
			want: []Target{target("4.19.1", SelectYStream)}},
		{name: "an empty selection (none) selects nothing", cv: offeringClusterVersion("4.18.2", avail, nil, nil), sel: Selection{}},
		{name: "releases older than the running one are no target",
			cv: offeringClusterVersion("4.18.6", []configv1.Release{rel("4.18.5"), rel("4.18.6")}, nil, nil), sel: DefaultSelection},
		{name: "a recommended conditional update counts, a not recommended one does not",
			cv: offeringClusterVersion("4.18.2", []configv1.Release{rel("4.18.3")},
				[]configv1.ConditionalUpdate{conditional("4.18.9", metav1.ConditionTrue), conditional("4.19.4", metav1.ConditionFalse)}, nil),
			sel:  DefaultSelection,
			want: []Target{target("4.18.9", SelectZStream)}},
		{name: "a desired update given by version takes its image from the available updates",
			cv:   offeringClusterVersion("4.18.2", avail, nil, &configv1.Update{Version: "4.18.4"}),
			sel:  DefaultSelection,
			want: []Target{target("4.18.4", SelectDesired), target("4.18.5", SelectZStream), target("4.19.1", SelectYStream)}},
		{name: "a desired update that is also the newest is one target for both reasons",
			cv:   offeringClusterVersion("4.18.2", avail, nil, &configv1.Update{Version: "4.19.1", Image: releaseDigestRef("4.19.1")}),
			sel:  Selection{YStream: true, Desired: true},
			want: []Target{target("4.19.1", SelectYStream, SelectDesired)}},
		{name: "a desired update the CVO already acted on is no target",
			cv:  offeringClusterVersion("4.18.4", nil, nil, &configv1.Update{Version: "4.18.4"}),
			sel: DefaultSelection},
		{name: "an update without an image digest is skipped with a reason",
			cv:  offeringClusterVersion("4.18.2", []configv1.Release{{Version: "4.18.7", Image: "quay.io/openshift-release-dev/ocp-release:4.18.7"}, rel("4.18.3")}, nil, nil),
			sel: DefaultSelection, want: []Target{target("4.18.3", SelectZStream)},
			wantSkipped: []string{`ClusterVersion version: status.availableUpdates[0]: release 4.18.7: image "quay.io/openshift-release-dev/ocp-release:4.18.7" is not a reference by digest (registry/repository@sha256:<64 hex>)`}},
		{name: "an unparsable version is skipped with a reason",
			cv:  offeringClusterVersion("4.18.2", []configv1.Release{rel("4.18"), rel("4.18.3")}, nil, nil),
			sel: DefaultSelection, want: []Target{target("4.18.3", SelectZStream)},
			wantSkipped: []string{`ClusterVersion version: status.availableUpdates[0]: version "4.18" is not a semantic version: No Major.Minor.Patch elements found`}},
		{name: "an unparsable running version selects nothing, with a reason",
			cv:          offeringClusterVersion("four", avail, nil, nil),
			sel:         DefaultSelection,
			wantSkipped: []string{`ClusterVersion version: status.desired.version "four" is not a semantic version: No Major.Minor.Patch elements found`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := SelectTargets(tc.cv, tc.sel)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("targets (-want +got):\n%s", d)
			}
			var reasons []string
			for _, s := range skipped {
				reasons = append(reasons, s.Reason)
			}
			if d := cmp.Diff(tc.wantSkipped, reasons); d != "" {
				t.Errorf("skipped (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseSelection(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    Selection
	}{
		{in: "", want: DefaultSelection},
		{in: "z-stream", want: Selection{ZStream: true}},
		{in: "y-stream, desired", want: Selection{YStream: true, Desired: true}},
		{in: "none", want: Selection{}},
		{in: "none,z-stream", err: `"none,z-stream": none cannot be combined with other selectors`},
		{in: "x-stream", err: `selector "x-stream": want z-stream, y-stream, desired or none`},
	} {
		got, err := ParseSelection(tc.in)
		var msg string
		if err != nil {
			msg = err.Error()
		}
		if d := cmp.Diff(tc.err, msg); d != "" {
			t.Errorf("ParseSelection(%q) error (-want +got):\n%s", tc.in, d)
		}
		if d := cmp.Diff(tc.want, got); err == nil && d != "" {
			t.Errorf("ParseSelection(%q) (-want +got):\n%s", tc.in, d)
		}
	}
}

// FuzzSelectTargets: whatever versions and images a ClusterVersion offers,
// selection never panics, and every target is newer than the running
// release and pinned by digest.
func FuzzSelectTargets(f *testing.F) {
	f.Add("4.18.2", "4.18.3", releaseDigestRef("4.18.3"), "4.19.0", "x", "z-stream,y-stream,desired")
	f.Add("4.18.2", "4.18", "", "4.19.0-rc.1", releaseDigestRef("4.19.0"), "")
	f.Fuzz(func(t *testing.T, current, v1, img1, v2, img2, sel string) {
		s, err := ParseSelection(sel)
		if err != nil {
			return
		}
		cv := offeringClusterVersion(current, []configv1.Release{{Version: v1, Image: img1}}, nil, &configv1.Update{Version: v2, Image: img2})
		got, _ := SelectTargets(cv, s)
		for _, tg := range got {
			if tg.Version == current || tg.Image == "" || !strings.Contains(tg.Image, "@sha256:") {
				t.Fatalf("target %+v of running %q: want a newer release by digest", tg, current)
			}
		}
	})
}
