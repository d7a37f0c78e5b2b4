package trigger

import (
	"context"
	"fmt"
	"maps"
	"strings"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// The upgrade status: one line per pool and target release in ConfigMap
// kiln-upgrade-status of the trigger's namespace, for `oc get cm -o yaml`
// and dashboards, beside the ClusterVersion's events and the
// kiln_upgrade_ready metric. The key is <pool>_<release> (pool names and
// release label values hold no "_"); the value starts with Ready, Running
// or NotReady, and a NotReady line names the failed stage and its cause.
const (
	UpgradeStatusConfigMap = "kiln-upgrade-status"

	StatusReady    = "Ready"
	StatusRunning  = "Running"
	StatusNotReady = "NotReady"

	// maxStatusLine bounds one line; a ConfigMap holds at most 1 MiB, and
	// 50 pools with two targets each stay far below it.
	maxStatusLine = 1024
)

// statusKey is pool's key for release, "" when it is no ConfigMap key.
func statusKey(pool, release string) string {
	k := pool + "_" + release
	if len(validation.IsConfigMapKey(k)) > 0 {
		return ""
	}
	return k
}

// statusLines are pool's lines for its wants: a want with no run yet is
// Running when its payload was read (its run is being made) and NotReady
// when it was not; a run is Running until it is done.
func statusLines(pool string, runs []*pipelinev1.PipelineRun, wants []aheadWant) map[string]string {
	out := map[string]string{}
	for _, w := range wants {
		k := statusKey(pool, w.target.Version)
		if k == "" {
			continue
		}
		r := runOf(runs, w.sum)
		var line string
		switch {
		case r == nil && w.err != nil:
			line = UnreadableLine(w.err)
		case r == nil:
			line = StatusRunning + ": creating its upgrade-ahead PipelineRun"
		default:
			o := outcomeOf(r)
			if !o.done {
				line = StatusRunning + ": PipelineRun " + r.Name
			} else {
				line = ReadinessLine(r.Name, o.ready, o.stage, o.cause)
			}
		}
		out[k] = capLine(termsafe.Escape(line))
	}
	return out
}

// UnreadableLine is the status of a target whose payload could not be
// read: no upgrade-ahead run was made.
func UnreadableLine(err error) string {
	return StatusNotReady + ": payload: no upgrade-ahead run: " + err.Error()
}

// ReadinessLine is the status of a finished upgrade-ahead run: Ready, or
// NotReady with the failed stage and its cause. Cluster mode writes it to
// kiln-upgrade-status, local mode prints it; the caller escapes it.
func ReadinessLine(run string, ready bool, stage, cause string) string {
	if ready {
		return StatusReady + ": PipelineRun " + run + " built, signed and verified the node image"
	}
	return StatusNotReady + ": " + stage + ": " + cause + " (PipelineRun " + run + ")"
}

// capLine cuts an escaped line at maxStatusLine bytes, on a rune boundary.
func capLine(s string) string {
	if len(s) <= maxStatusLine {
		return s
	}
	return strings.ToValidUTF8(s[:maxStatusLine-len("…")], "") + "…"
}

// syncStatus sets pool's lines in kiln-upgrade-status to lines (none: the
// pool's lines go), leaving every other pool's alone. Nothing is written
// when they are already there. A ConfigMap of that name without the
// trigger's label is not the trigger's and is left alone.
func (c *Controller) syncStatus(ctx context.Context, pool string, lines map[string]string) error {
	key := client.ObjectKey{Namespace: c.Namespace, Name: UpgradeStatusConfigMap}
	var r client.Reader = c.Client // the cache first; on a conflict, the apiserver
	for attempt := 0; ; attempt++ {
		var cm corev1.ConfigMap
		err := r.Get(ctx, key, &cm)
		if apierrors.IsNotFound(err) {
			if len(lines) == 0 {
				return nil
			}
			cm = corev1.ConfigMap{ObjectMeta: c.copyMeta(UpgradeStatusConfigMap, ""), Data: lines}
			err = c.Client.Create(ctx, &cm)
			if apierrors.IsAlreadyExists(err) && attempt < 5 {
				r = c.APIReader
				continue
			}
			if err != nil {
				return fmt.Errorf("creating ConfigMap %s/%s: %w", c.Namespace, UpgradeStatusConfigMap, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading ConfigMap %s/%s: %w", c.Namespace, UpgradeStatusConfigMap, err)
		}
		if cm.Labels[LabelManagedBy] != ManagedBy {
			log.FromContext(ctx).Info("upgrade status not written: the ConfigMap is not the trigger's", "configmap", key.String(), "label", LabelManagedBy+"="+ManagedBy)
			return nil
		}
		next := withPoolLines(cm.Data, pool, lines)
		if maps.Equal(next, cm.Data) {
			return nil
		}
		cm.Data = next
		err = c.Client.Update(ctx, &cm)
		if apierrors.IsConflict(err) && attempt < 5 {
			r = c.APIReader
			continue
		}
		if err != nil {
			return fmt.Errorf("updating ConfigMap %s/%s: %w", c.Namespace, UpgradeStatusConfigMap, err)
		}
		return nil
	}
}

// withPoolLines is data with pool's lines replaced by lines.
func withPoolLines(data map[string]string, pool string, lines map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range data {
		if !strings.HasPrefix(k, pool+"_") {
			out[k] = v
		}
	}
	maps.Copy(out, lines)
	return out
}
