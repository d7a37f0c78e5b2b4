package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/trigger"
)

// State is local mode's memory between runs, kept in the output folder:
// per pool, the fingerprint of the last run that succeeded.
type State struct {
	Pools map[string]PoolState `json:"pools"`
	// Ahead are the upgrade-ahead runs that succeeded, by pool/release
	// (localahead.go).
	Ahead map[string]AheadState `json:"ahead,omitempty"`
}

// PoolState is one pool's last successful run.
type PoolState struct {
	Fingerprint string                  `json:"fingerprint"`
	Parts       map[trigger.Part]string `json:"parts"`
	// Inputs are Fingerprint.Inputs, for the next run's Describe.
	Inputs map[string]string `json:"inputs,omitempty"`
	Run    string            `json:"run"`
}

const stateFile = "state.json"

// ReadState reads dir/state.json; a missing file is an empty state.
func ReadState(dir string) (State, error) {
	st := State{Pools: map[string]PoolState{}, Ahead: map[string]AheadState{}}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("reading %s: %w (delete it to start over)", filepath.Join(dir, stateFile), err)
	}
	if st.Pools == nil {
		st.Pools = map[string]PoolState{}
	}
	if st.Ahead == nil {
		st.Ahead = map[string]AheadState{}
	}
	return st, nil
}

// Write saves the state atomically: a kill leaves the old state or the
// new one, never a torn file.
func (st State) Write(dir string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return safepath.WriteFileAtomic(filepath.Join(dir, stateFile), append(b, '\n'), 0o644)
}

// PoolPlan is local mode's decision for one enabled pool.
type PoolPlan struct {
	Pool        string
	Fingerprint trigger.Fingerprint
	// Run is the run's name, kiln-<pool>-<trigger>-<fp[:10]>, as in
	// cluster mode; for an unchanged pool, its last run's.
	Run string
	// Changed: no successful run has this fingerprint; Trigger says why
	// and Changes what (Fingerprint.Describe).
	Changed bool
	Trigger string
	Changes string
	// Wave is the pool's kiln.dev/wave (0 without the label).
	Wave int
}

// PlanLocal fingerprints every enabled pool of objs (mcrender.LoadDir, the
// folder render itself reads) exactly as cluster mode does and compares
// with the last successful runs in st. Pools are taken by name.
func PlanLocal(ctx context.Context, objs *mcrender.Objects, st State, pipelineVersion string, resolve func(context.Context, string) (string, error)) ([]PoolPlan, error) {
	facts, err := objs.Payload()
	if err != nil {
		return nil, err
	}
	pools := append([]*mcfgv1.MachineConfigPool(nil), objs.Pools...)
	sort.Slice(pools, func(i, j int) bool { return pools[i].Name < pools[j].Name })
	var h trigger.SpecHasher
	var plans []PoolPlan
	for _, pool := range pools {
		// The same check as cluster mode: a bad label stops the run
		// rather than reading "2a" as wave 0 or "True" as disabled.
		enabled, wave, err := trigger.PoolLabels(pool)
		if err != nil {
			return nil, err
		}
		if !enabled {
			continue
		}
		in, err := trigger.GatherInputs(ctx, pool, objs.Configs, objs.Modules, facts, resolve)
		if err != nil {
			return nil, err
		}
		in.PipelineVersion = pipelineVersion
		fp, err := h.Compute(in)
		if err != nil {
			return nil, err
		}
		prev, ok := st.Pools[pool.Name]
		p := PoolPlan{Pool: pool.Name, Fingerprint: fp, Run: prev.Run, Changed: !ok || prev.Fingerprint != fp.Sum, Wave: wave}
		if p.Changed {
			p.Trigger, p.Changes = fp.Changed(prev.Parts), fp.Describe(prev.Parts, prev.Inputs)
			p.Run = trigger.RunName(pool.Name, p.Trigger, fp.Sum)
		}
		plans = append(plans, p)
	}
	if len(plans) == 0 {
		return nil, fmt.Errorf("no MachineConfigPool has the label %s=true: nothing to build", trigger.LabelEnabled)
	}
	return plans, nil
}
