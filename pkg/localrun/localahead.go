package localrun

import (
	"context"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/termsafe"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/pkg/work"
)

// Upgrade-ahead in local mode: when the folder's ClusterVersion offers
// releases that kiln-config's upgradeAhead selects (the folder's
// ConfigMap kiln-config in the trigger's namespace; without one, the
// cluster default), every enabled pool gets the run cluster mode would
// make for each (trigger.AheadParams: the target's images, no rollout, no
// boot images), after the pools' own runs. Its outcome is the line
// cluster mode writes to kiln-upgrade-status, printed under the summary.
// A prepared target is remembered in state.json under its upgrade-ahead
// fingerprint, as a pool's own run is: the next invocation with the same
// inputs and offer runs nothing and prints Ready again. A failed run is
// not remembered, so the next invocation tries it again. Readiness never
// changes the exit status: that stays the pools' own runs'.

// AheadState is one prepared target of a pool.
type AheadState struct {
	Pool        string `json:"pool"`
	Release     string `json:"release"`
	Fingerprint string `json:"fingerprint"`
	Run         string `json:"run"`
}

// aheadKey keys State.Ahead: pool and release.
func aheadKey(pool, release string) string { return pool + "/" + release }

// aheadPlan is one pool's upgrade-ahead run for one target.
type aheadPlan struct {
	pool   string
	target payload.Target
	sum    string
	run    string
	// done: state.json has this fingerprint's successful run.
	done bool
	// facts are the target's images; err says why they could not be read
	// (then no run is made).
	facts payload.Facts
	err   error
	// line is the readiness, once known (trigger.ReadinessLine).
	line string
}

// planAhead is the upgrade-ahead run per enabled pool (plans, in wave
// order) and target cv offers that sel selects, with those st already
// has marked done; skipped are the offers that cannot be a target.
func planAhead(cv *configv1.ClusterVersion, sel payload.Selection, plans []PoolPlan, st State) ([]aheadPlan, []payload.Skipped) {
	targets, skipped := payload.SelectTargets(cv, sel)
	var out []aheadPlan
	for _, pl := range plans {
		for _, t := range targets {
			sum := trigger.AheadSum(pl.Fingerprint.Sum, t)
			run := trigger.AheadRunName(pl.Pool, t.Version, sum)
			prev, ok := st.Ahead[aheadKey(pl.Pool, t.Version)]
			done := ok && prev.Fingerprint == sum
			a := aheadPlan{pool: pl.Pool, target: t, sum: sum, run: run, done: done}
			if done {
				a.line = trigger.ReadinessLine(prev.Run, true, "", "")
			}
			out = append(out, a)
		}
	}
	return out, skipped
}

// aheadSelection is the folder's kiln-config upgradeAhead, or the
// default when the folder has no kiln-config or it has no such key.
func aheadSelection(objs *mcrender.Objects, namespace string) (payload.Selection, error) {
	for _, cm := range objs.ConfigMaps {
		if cm.Name == trigger.ConfigName && cm.Namespace == namespace {
			return trigger.UpgradeAheadSelection(cm)
		}
	}
	return payload.DefaultSelection, nil
}

// clusterVersion is the folder's ClusterVersion "version", nil without one.
func clusterVersion(objs *mcrender.Objects) *configv1.ClusterVersion {
	for _, cv := range objs.ClusterVersions {
		if cv.Name == payload.ClusterVersionName {
			return cv
		}
	}
	return nil
}

// readTargets reads the payload of every target a plan still needs a run
// for, once per release image, through the folder's registries (r).
func readTargets(ctx context.Context, plans []aheadPlan, r registry.Remote) {
	type read struct {
		facts payload.Facts
		err   error
	}
	seen := map[string]read{}
	for i := range plans {
		a := &plans[i]
		if a.done {
			continue
		}
		got, ok := seen[a.target.Image]
		if !ok {
			got.facts, got.err = payload.ReleaseFacts(ctx, a.target.Version, a.target.Image, r)
			seen[a.target.Image] = got
		}
		a.facts, a.err = got.facts, got.err
		if a.err != nil {
			a.line = trigger.UnreadableLine(a.err)
		}
	}
}

// pending: some plan needs a run.
func pending(plans []aheadPlan) bool {
	return slices.ContainsFunc(plans, func(a aheadPlan) bool { return !a.done && a.err == nil })
}

// runAhead runs every plan that needs a run and records its readiness.
// Only an error that stops local mode itself is returned.
func (l *localRun) runAhead(ctx context.Context, plans []aheadPlan) error {
	for i := range plans {
		a := &plans[i]
		if a.done || a.err != nil {
			continue
		}
		fmt.Fprintf(l.w, "pool %s: preparing release %s ahead of the upgrade, running %s\n", a.pool, termsafe.Escape(a.target.Version), a.run)
		params := trigger.AheadParams(a.target, a.facts)
		params["trigger"] = trigger.TriggerUpgradeAhead
		params["changes"] = trigger.AheadChanges(a.target)
		params["update-boot-images"] = "false"
		res, att, _, err := l.execute(ctx, a.pool, a.run, params)
		if err != nil {
			return err
		}
		l.summaries = append(l.summaries, summary{pool: a.pool, trigger: trigger.TriggerUpgradeAhead, run: a.run, status: res.Status,
			rendered: taskResult(res, "render", "RENDERED_NAME"), digest: taskResult(res, "image-build", "IMAGE_DIGEST"),
			signed: signed(res)})
		stage, cause := failure(res.Results, res.FailedTask, res.Message)
		a.line = trigger.ReadinessLine(a.run, res.Succeeded, stage, cause)
		if res.Succeeded {
			a.done = true
			l.st.Ahead[aheadKey(a.pool, a.target.Version)] = AheadState{Pool: a.pool, Release: a.target.Version, Fingerprint: a.sum, Run: a.run}
			if err := l.st.Write(l.out); err != nil {
				return err
			}
		}
		att.end(res.Status)
	}
	return nil
}

// failure is a failed run's stage and cause: the report's FAILED_STAGE
// and FAILURE results, as cluster mode reads them, else the failed task
// and the executor's message.
func failure(results map[string]string, task, msg string) (string, string) {
	stage, cause := results[work.ResultFailedStage], results[work.ResultFailure]
	if stage == "" {
		stage = task
	}
	if cause == "" {
		cause = msg
	}
	return stage, cause
}

// forgetAhead drops from st the targets plans no longer has (no longer
// offered or selected, or a pool gone), and reports whether it did.
func forgetAhead(st State, plans []aheadPlan) bool {
	keep := map[string]bool{}
	for _, a := range plans {
		keep[aheadKey(a.pool, a.target.Version)] = true
	}
	changed := false
	for k := range st.Ahead {
		if !keep[k] {
			delete(st.Ahead, k)
			changed = true
		}
	}
	return changed
}

// printReadiness prints each plan's readiness, escaped: the lines hold
// a release's version and a step's message, both from outside.
func printReadiness(w io.Writer, plans []aheadPlan, skipped []payload.Skipped) {
	for _, s := range skipped {
		fmt.Fprintf(w, "upgrade target skipped: %s\n", termsafe.Escape(s.Reason))
	}
	if len(plans) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nPOOL\tRELEASE\tUPGRADE READINESS")
	for _, a := range plans {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", a.pool, termsafe.Escape(a.target.Version), termsafe.Escape(a.line))
	}
	_ = tw.Flush()
}
