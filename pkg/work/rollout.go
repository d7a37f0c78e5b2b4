package work

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Files of rollout in rollout/: the timeline of node conditions and the
// drift gate's diff, as JSON (the report reads it) and as text (for
// people).
const (
	TimelineFile = "timeline.json"
	DriftJSON    = "drift.json"
	DriftText    = "drift.txt"
)

// TimelinePath is rollout/timeline.json.
func (w Workspace) TimelinePath() string {
	return filepath.Join(w.StageDir(StageRollout), TimelineFile)
}

// DriftJSONPath is rollout/drift.json.
func (w Workspace) DriftJSONPath() string {
	return filepath.Join(w.StageDir(StageRollout), DriftJSON)
}

// Event is one condition transition of one node, as the timeline records it.
type Event struct {
	Node    string                 `json:"node"`
	Phase   string                 `json:"phase"`
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason,omitempty"`
	Message string                 `json:"message,omitempty"`
	Time    time.Time              `json:"time"`
}

// Drift is the difference between the rendered config kiln predicted for a
// pool and the one MCO rendered (the drift gate, README "Drift gate").
type Drift struct {
	Pool string `json:"pool"`
	// Predicted is kiln's name (PREDICTED_RENDERED_NAME); Rendered is MCO's
	// (the pool's spec.configuration.name).
	Predicted string `json:"predicted"`
	Rendered  string `json:"rendered"`
	// SpecsEqual: the specs compare equal after normalisation (both
	// Ignition configs parsed to spec 3.5, lists keyed by path or name),
	// so the names differ for a reason outside the merged content.
	SpecsEqual bool `json:"specsEqual"`
	// Cause says in one sentence why the names differ.
	Cause string `json:"cause"`
	// Differences are every differing path, the first one first.
	Differences []Difference `json:"differences,omitempty"`
	// OnlyKiln and OnlyMCO are input MachineConfigs one side merged and
	// the other did not (MCO's from the pool's spec.configuration.source).
	OnlyKiln []string `json:"onlyKiln,omitempty"`
	OnlyMCO  []string `json:"onlyMCO,omitempty"`
	// Annotations differing between the two objects; they are not part of
	// the name, but say which controller version rendered MCO's.
	Annotations []Difference `json:"annotations,omitempty"`
}

// Difference is one path whose value differs.
type Difference struct {
	// Path is under the MachineConfig, list entries by their path or
	// name: spec.config.storage.files[/etc/x].contents.source.
	Path string `json:"path"`
	// Kind is file, unit, kernel argument, extension or field.
	Kind string `json:"kind"`
	// Kiln and MCO are the values, "(absent)" where a side has none.
	Kiln string `json:"kiln"`
	MCO  string `json:"mco"`
	// SetBy is the last of kiln's inputs, in merge order, that sets the
	// path: where kiln's value came from.
	SetBy string `json:"setBy,omitempty"`
	// SetByMCOOnly are inputs only MCO merged that set the path.
	SetByMCOOnly []string `json:"setByMCOOnly,omitempty"`
}

// Text is the diff as a person reads it (rollout/drift.txt, the report).
func (d *Drift) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drift on pool %s: kiln predicted %s, MCO rendered %s\n", d.Pool, d.Predicted, d.Rendered)
	fmt.Fprintf(&b, "cause: %s\n", d.Cause)
	if len(d.OnlyMCO) > 0 {
		fmt.Fprintf(&b, "inputs only MCO merged: %s\n", strings.Join(d.OnlyMCO, ", "))
	}
	if len(d.OnlyKiln) > 0 {
		fmt.Fprintf(&b, "inputs only kiln merged: %s\n", strings.Join(d.OnlyKiln, ", "))
	}
	for _, f := range append(slices.Clone(d.Differences), d.Annotations...) {
		fmt.Fprintf(&b, "- %s (%s)\n    kiln: %s\n    MCO:  %s\n", f.Path, f.Kind, f.Kiln, f.MCO)
		if f.SetBy != "" {
			fmt.Fprintf(&b, "    set by: MachineConfig %s\n", f.SetBy)
		}
		if len(f.SetByMCOOnly) > 0 {
			fmt.Fprintf(&b, "    also set by (merged by MCO only): %s\n", strings.Join(f.SetByMCOOnly, ", "))
		}
	}
	return b.String()
}
