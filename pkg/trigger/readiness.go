package trigger

import (
	"context"
	"fmt"
	"strings"
	"sync"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/prometheus/client_golang/prometheus"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"knative.dev/pkg/apis"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kiln-dev/kiln/pkg/work"
)

// Readiness: whether a pool's next node image for an offered release is
// built, signed and verified, told before anyone starts the upgrade.
const (
	ReasonUpgradeReady    = "UpgradeReady"
	ReasonUpgradeNotReady = "UpgradeNotReady"
	// AnnotReadinessReported marks an upgrade-ahead run whose outcome the
	// trigger has told on the ClusterVersion, so that a restart or the
	// next reconcile does not tell it again.
	AnnotReadinessReported = "kiln.dev/readiness-reported"

	// maxCause bounds the cause an event quotes from a run's results.
	maxCause = 512
)

// metricUpgradeReady is 1 when pool's upgrade-ahead run for release
// succeeded and 0 when it failed; a release whose run has not finished,
// or that is no longer a target, has no series.
var metricUpgradeReady = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "kiln_upgrade_ready",
	Help: "1 when the pool's next node image for the offered release is built, signed and verified (upgrade-ahead run succeeded), 0 when that run failed.",
}, []string{"pool", "release"})

func init() {
	metrics.Registry.MustRegister(metricUpgradeReady)
}

// readyReleases remembers, per pool, the releases with a
// kiln_upgrade_ready series, so that a release no longer targeted loses
// its series.
type readyReleases struct {
	mu sync.Mutex
	m  map[string]map[string]bool
	// told is the cause last told per pool and release whose payload
	// could not be read.
	told map[[2]string]string
}

// tellOnce reports whether cause is new for pool and release, and
// remembers it.
func (r *readyReleases) tellOnce(pool, release, cause string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.told == nil {
		r.told = map[[2]string]string{}
	}
	k := [2]string{pool, release}
	if r.told[k] == cause {
		return false
	}
	r.told[k] = cause
	return true
}

// keep sets pool's series to exactly the releases in now (release →
// ready); releases missing from now lose their series.
func (r *readyReleases) keep(pool string, now map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[string]bool{}
	}
	for rel := range r.m[pool] {
		if _, ok := now[rel]; !ok {
			metricUpgradeReady.DeleteLabelValues(pool, rel)
		}
	}
	for k := range r.told {
		if _, ok := now[k[1]]; k[0] == pool && !ok {
			delete(r.told, k)
		}
	}
	seen := map[string]bool{}
	for rel, ready := range now {
		v := 0.0
		if ready {
			v = 1
		}
		metricUpgradeReady.WithLabelValues(pool, rel).Set(v)
		seen[rel] = true
	}
	r.m[pool] = seen
}

// outcome is what a finished upgrade-ahead run says of its release.
type outcome struct {
	done, ready  bool
	stage, cause string
}

// outcomeOf reads a run's outcome: its Succeeded condition, and for a
// failure the report's FAILED_STAGE and FAILURE results, else the
// condition's reason and message (a run cancelled or timed out before the
// report ran).
func outcomeOf(pr *pipelinev1.PipelineRun) outcome {
	cond := pr.Status.GetCondition(apis.ConditionSucceeded)
	if cond == nil || !pr.IsDone() {
		return outcome{}
	}
	if cond.IsTrue() {
		return outcome{done: true, ready: true}
	}
	o := outcome{done: true, stage: cond.Reason, cause: cond.Message}
	for _, r := range pr.Status.Results {
		switch r.Name {
		case work.ResultFailedStage:
			if r.Value.StringVal != "" {
				o.stage = r.Value.StringVal
			}
		case work.ResultFailure:
			if r.Value.StringVal != "" {
				o.cause = r.Value.StringVal
			}
		}
	}
	if len(o.cause) > maxCause {
		o.cause = strings.ToValidUTF8(o.cause[:maxCause], "") + "…"
	}
	return o
}

// publishReadiness sets kiln_upgrade_ready for pool's wanted targets from
// their runs (newest first), and tells each newly finished run's outcome
// once, as an event on the ClusterVersion.
func (c *Controller) publishReadiness(ctx context.Context, pool string, cv *configv1.ClusterVersion, runs []*pipelinev1.PipelineRun, wants []aheadWant) error {
	now := map[string]bool{}
	for _, w := range wants {
		r := runOf(runs, w.sum)
		if r == nil {
			if w.err != nil {
				now[w.target.Version] = false
				c.tellUnreadable(cv, pool, w)
			}
			continue
		}
		o := outcomeOf(r)
		if !o.done {
			continue
		}
		now[w.target.Version] = o.ready
		if cv == nil || r.Annotations[AnnotReadinessReported] != "" {
			continue
		}
		if o.ready {
			c.Recorder.Eventf(cv, corev1.EventTypeNormal, ReasonUpgradeReady, "pool %s is ready for release %s: PipelineRun %s built, signed and verified its node image",
				pool, w.target.Version, r.Name)
		} else {
			c.Recorder.Eventf(cv, corev1.EventTypeWarning, ReasonUpgradeNotReady, "pool %s is not ready for release %s: PipelineRun %s failed at %s: %s",
				pool, w.target.Version, r.Name, o.stage, o.cause)
		}
		if err := c.markReported(ctx, r); err != nil {
			return err
		}
	}
	c.ready.keep(pool, now)
	return nil
}

// tellUnreadable tells, once per pool, release and cause, that the pool
// is not ready for w's release because its payload could not be read, so
// no upgrade-ahead run was made.
func (c *Controller) tellUnreadable(cv *configv1.ClusterVersion, pool string, w aheadWant) {
	cause := w.err.Error()
	if len(cause) > maxCause {
		cause = strings.ToValidUTF8(cause[:maxCause], "") + "…"
	}
	if cv == nil || !c.ready.tellOnce(pool, w.target.Version, cause) {
		return
	}
	c.Recorder.Eventf(cv, corev1.EventTypeWarning, ReasonUpgradeNotReady, "pool %s is not ready for release %s: no upgrade-ahead run: its payload cannot be read: %s",
		pool, w.target.Version, cause)
}

func runOf(runs []*pipelinev1.PipelineRun, sum string) *pipelinev1.PipelineRun {
	for _, r := range runs {
		if r.Labels[LabelFingerprint] == sum {
			return r
		}
	}
	return nil
}

func (c *Controller) markReported(ctx context.Context, r *pipelinev1.PipelineRun) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"true"}}}`, AnnotReadinessReported)
	err := c.Client.Patch(ctx, r, client.RawPatch("application/merge-patch+json", patch))
	c.writes.note(r, false, err)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("marking PipelineRun %s reported: %w", r.Name, err)
	}
	return nil
}
