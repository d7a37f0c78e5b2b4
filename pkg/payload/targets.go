package payload

import (
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/kiln-dev/kiln/pkg/imageref"
)

// Selectors of upgrade targets (kiln-config's upgradeAhead).
const (
	// SelectZStream is the newest update of the running minor (4.18.z).
	SelectZStream = "z-stream"
	// SelectYStream is the newest update of a newer minor (4.19.z).
	SelectYStream = "y-stream"
	// SelectDesired is spec.desiredUpdate before the CVO acts on it: the
	// release the cluster is about to move to.
	SelectDesired = "desired"
	// SelectNone turns upgrade-ahead runs off.
	SelectNone = "none"
)

// conditionRecommended is the condition the CVO sets on each conditional
// update: True when the update's risks do not apply to this cluster
// (https://github.com/openshift/enhancements/blob/master/enhancements/update/targeted-update-edge-blocking.md).
const conditionRecommended = "Recommended"

// Selection says which available updates get an upgrade-ahead run.
type Selection struct {
	ZStream, YStream, Desired bool
}

// DefaultSelection prepares the newest z-stream, the newest y-stream and
// an update the user asked for that has not started yet.
var DefaultSelection = Selection{ZStream: true, YStream: true, Desired: true}

// ParseSelection reads a list of selectors separated by commas or spaces;
// "none" alone selects nothing, and an empty list is DefaultSelection.
func ParseSelection(v string) (Selection, error) {
	fields := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	if len(fields) == 0 {
		return DefaultSelection, nil
	}
	var s Selection
	for _, f := range fields {
		switch f {
		case SelectZStream:
			s.ZStream = true
		case SelectYStream:
			s.YStream = true
		case SelectDesired:
			s.Desired = true
		case SelectNone:
			if len(fields) > 1 {
				return Selection{}, fmt.Errorf("%q: %s cannot be combined with other selectors", v, SelectNone)
			}
		default:
			return Selection{}, fmt.Errorf("selector %q: want %s, %s, %s or %s", f, SelectZStream, SelectYStream, SelectDesired, SelectNone)
		}
	}
	return s, nil
}

// Target is a release an upgrade-ahead run prepares.
type Target struct {
	Version string
	// Image is the release image, by digest.
	Image string
	// Why lists the selectors that chose it (z-stream, y-stream, desired).
	Why []string
}

// Skipped is an update offered by the ClusterVersion that cannot be a
// target, and why; the caller reports it.
type Skipped struct {
	Version, Image, Reason string
}

type candidate struct {
	v       semver.Version
	image   string
	desired bool
}

// SelectTargets picks, from cv's offered updates (status.availableUpdates,
// status.conditionalUpdates whose Recommended condition is True, and
// spec.desiredUpdate while status.desired is not yet it), the releases s
// selects, oldest first. Offers that are older than the running release
// are ignored; offers without a parsable version or a release image by
// digest are skipped with a reason. A ClusterVersion whose own version
// does not parse selects nothing.
func SelectTargets(cv *configv1.ClusterVersion, s Selection) ([]Target, []Skipped) {
	if cv == nil || s == (Selection{}) {
		return nil, nil
	}
	current, err := semver.Parse(cv.Status.Desired.Version)
	if err != nil {
		return nil, []Skipped{{Version: cv.Status.Desired.Version, Image: cv.Status.Desired.Image,
			Reason: fmt.Sprintf("ClusterVersion %s: status.desired.version %q is not a semantic version: %v", cv.Name, cv.Status.Desired.Version, err)}}
	}
	cands, skipped := candidates(cv, current)
	picked := map[string]*Target{}
	pick := func(c *candidate, why string) {
		if c == nil {
			return
		}
		t, ok := picked[c.v.String()]
		if !ok {
			t = &Target{Version: c.v.String(), Image: c.image}
			picked[c.v.String()] = t
		}
		t.Why = append(t.Why, why)
	}
	if s.ZStream {
		pick(newest(cands, func(v semver.Version) bool { return v.Major == current.Major && v.Minor == current.Minor }), SelectZStream)
	}
	if s.YStream {
		pick(newest(cands, func(v semver.Version) bool {
			return v.Major > current.Major || (v.Major == current.Major && v.Minor > current.Minor)
		}), SelectYStream)
	}
	if s.Desired {
		for i := range cands {
			if cands[i].desired {
				pick(&cands[i], SelectDesired)
			}
		}
	}
	var out []Target
	for _, t := range picked {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return semver.MustParse(out[i].Version).LT(semver.MustParse(out[j].Version)) })
	return out, skipped
}

// candidates gathers the valid offers newer than current, one per version.
func candidates(cv *configv1.ClusterVersion, current semver.Version) ([]candidate, []Skipped) {
	var cands []candidate
	var skipped []Skipped
	byVersion := map[string]int{}
	add := func(where string, r configv1.Release, desired bool) {
		v, err := semver.Parse(r.Version)
		if err != nil {
			skipped = append(skipped, Skipped{Version: r.Version, Image: r.Image,
				Reason: fmt.Sprintf("ClusterVersion %s: %s: version %q is not a semantic version: %v", cv.Name, where, r.Version, err)})
			return
		}
		if !v.GT(current) {
			return
		}
		if !imageref.IsDigestRef(r.Image) {
			skipped = append(skipped, Skipped{Version: r.Version, Image: r.Image,
				Reason: fmt.Sprintf("ClusterVersion %s: %s: release %s: image %q is not a reference by digest (registry/repository@sha256:<64 hex>)", cv.Name, where, r.Version, r.Image)})
			return
		}
		if i, ok := byVersion[v.String()]; ok {
			cands[i].desired = cands[i].desired || desired
			return
		}
		byVersion[v.String()] = len(cands)
		cands = append(cands, candidate{v: v, image: r.Image, desired: desired})
	}
	for i, r := range cv.Status.AvailableUpdates {
		add(fmt.Sprintf("status.availableUpdates[%d]", i), r, false)
	}
	for i, u := range cv.Status.ConditionalUpdates {
		if meta.IsStatusConditionTrue(u.Conditions, conditionRecommended) {
			add(fmt.Sprintf("status.conditionalUpdates[%d]", i), u.Release, false)
		}
	}
	if d, ok := pendingDesired(cv); ok {
		add("spec.desiredUpdate", d, true)
	}
	return cands, skipped
}

// pendingDesired is spec.desiredUpdate while the CVO has not acted on it
// (status.desired is still another release). An update given by version
// alone takes its image from the offered updates, as the CVO does.
func pendingDesired(cv *configv1.ClusterVersion) (configv1.Release, bool) {
	u := cv.Spec.DesiredUpdate
	if u == nil || (u.Version == "" && u.Image == "") {
		return configv1.Release{}, false
	}
	cur := cv.Status.Desired
	if (u.Image != "" && u.Image == cur.Image) || (u.Image == "" && u.Version == cur.Version) {
		return configv1.Release{}, false
	}
	r := configv1.Release{Version: u.Version, Image: u.Image}
	if r.Image == "" {
		for _, a := range cv.Status.AvailableUpdates {
			if a.Version == u.Version {
				r.Image = a.Image
			}
		}
		for _, c := range cv.Status.ConditionalUpdates {
			if c.Release.Version == u.Version && meta.IsStatusConditionTrue(c.Conditions, conditionRecommended) {
				r.Image = c.Release.Image
			}
		}
	}
	if r.Version == "" {
		for _, a := range cv.Status.AvailableUpdates {
			if a.Image == u.Image {
				r.Version = a.Version
			}
		}
	}
	return r, true
}

func newest(cands []candidate, ok func(semver.Version) bool) *candidate {
	var best *candidate
	for i := range cands {
		if ok(cands[i].v) && (best == nil || cands[i].v.GT(best.v)) {
			best = &cands[i]
		}
	}
	return best
}
