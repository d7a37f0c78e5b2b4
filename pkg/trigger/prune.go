package trigger

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/retention"
)

// minPruneInterval keeps a schedule from hammering the registry: each
// prune lists and verifies every signed image of kiln's repositories.
const minPruneInterval = 10 * time.Minute

// Retention is kiln-config's retention block.
type Retention struct {
	// KeepPerPool is how many of each pool's most recent rendered configs'
	// images a prune keeps besides the current and desired ones.
	KeepPerPool int
	// Schedule is how often the trigger runs kiln-prune; 0 is off, the
	// default.
	Schedule time.Duration
	// Apply passes apply "true" to the prune (it deletes); false, the
	// default, makes it a dry run that prints the plan.
	Apply bool
}

// DefaultRetention is the retention block kiln-config does not set: no
// scheduled prune.
func DefaultRetention() Retention { return Retention{KeepPerPool: retention.DefaultPerPool} }

// parseRetention reads the retention block. where names the key for
// errors (ConfigMap ns/name: data.retention); every error adds the field.
func parseRetention(v string, where string) (Retention, error) {
	r := DefaultRetention()
	var raw map[string]any
	if err := yaml.Unmarshal([]byte(v), &raw); err != nil {
		return r, fmt.Errorf("%s: want a map with keepPerPool, schedule and apply: %w", where, err)
	}
	for _, k := range sortedKeys(raw) {
		field := where + "." + k
		var err error
		switch k {
		case "keepPerPool":
			r.KeepPerPool, err = parseKeep(raw[k])
		case "schedule":
			r.Schedule, err = parseSchedule(raw[k])
		case "apply":
			b, ok := raw[k].(bool)
			if !ok {
				err = fmt.Errorf("%v: want true or false", raw[k])
			}
			r.Apply = b
		default:
			err = fmt.Errorf("unknown key: want keepPerPool, schedule or apply")
		}
		if err != nil {
			return r, fmt.Errorf("%s %w", field, err)
		}
	}
	return r, nil
}

func parseKeep(v any) (int, error) {
	n, ok := v.(float64) // YAML numbers arrive as JSON numbers
	if !ok || n != math.Trunc(n) || n < 0 || n > 1000 {
		return 0, fmt.Errorf("%v: want a whole number of images from 0 to 1000", v)
	}
	return int(n), nil
}

// parseSchedule reads a Go duration such as 24h, or off. YAML 1.1 reads
// an unquoted off as false.
func parseSchedule(v any) (time.Duration, error) {
	switch s := v.(type) {
	case bool:
		if !s {
			return 0, nil
		}
	case string:
		if s == "off" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err == nil && d >= minPruneInterval {
			return d, nil
		}
	}
	return 0, fmt.Errorf("%v: want off or a Go duration of at least %v, such as 24h", v, minPruneInterval)
}

// The scheduled prune: every Retention.Schedule the trigger creates a
// TaskRun of kiln-prune (tasks/prune.yaml) with the retention block's
// params, one at a time. A prune never starts while a run is between
// image-build and rollout (its image-build TaskRun succeeded, its
// rollout TaskRun has not finished): the whole prune is postponed, not
// only that pool's repository, since kmod images and a repository shared
// by pools are covered by every pool's run; it is tried again every
// pruneRecheck and on every run event.
const (
	// PruneTask is the Task the scheduled prune runs.
	PruneTask = "kiln-prune"
	// LabelTask tells the trigger's TaskRuns (the scheduled prune) apart.
	LabelTask = "run.kiln.dev/task"
	taskPrune = "prune"
	// pruneRecheck is how soon a prune postponed or waiting for the
	// previous one is tried again.
	pruneRecheck = time.Minute

	ReasonPruneCreated   = "PruneRunCreated"
	ReasonPrunePostponed = "PrunePostponed"
)

// pruneKey is the one request of the prune reconciler.
var pruneKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "\x00prune"}}

func pruneOnly(context.Context, client.Object) []reconcile.Request {
	return []reconcile.Request{pruneKey}
}

// reconcilePrune creates the scheduled prune's TaskRun when it is due.
func (c *Controller) reconcilePrune(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	cm, cfg, err := c.readConfig(ctx)
	if err != nil || cfg.Retention.Schedule == 0 {
		if err != nil {
			log.FromContext(ctx).Info("no scheduled prune", "error", err.Error())
		}
		return reconcile.Result{}, nil // kiln-config's changes requeue us
	}
	now := time.Now()
	wait, err := c.pruneWait(ctx, cfg.Retention.Schedule, now)
	if err != nil || wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, err
	}
	busy, err := c.runsBetweenBuildAndRollout(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(busy) > 0 {
		msg := fmt.Sprintf("scheduled prune postponed: %s between image-build and rollout", strings.Join(busy, ", "))
		c.event(cm, corev1.EventTypeNormal, ReasonPrunePostponed, msg)
		log.FromContext(ctx).Info(msg)
		return reconcile.Result{RequeueAfter: pruneRecheck}, nil
	}
	tr := BuildPruneRun(cfg, c.Namespace, now)
	if cfg.Cluster, err = c.clusterRun(ctx, pruneWorkspaces); err != nil {
		return reconcile.Result{}, err
	}
	applyToTaskRun(cfg.Cluster, tr)
	if err := validateTaskRun(ctx, tr); err != nil {
		return reconcile.Result{}, err
	}
	if err := c.Client.Create(ctx, tr); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, fmt.Errorf("creating TaskRun %s: %w", tr.Name, err)
	}
	c.event(cm, corev1.EventTypeNormal, ReasonPruneCreated, fmt.Sprintf("created TaskRun %s (apply %t)", tr.Name, cfg.Retention.Apply))
	return reconcile.Result{RequeueAfter: cfg.Retention.Schedule}, nil
}

// readConfig reads and parses kiln-config.
func (c *Controller) readConfig(ctx context.Context) (*corev1.ConfigMap, Config, error) {
	var cm corev1.ConfigMap
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ConfigName}, &cm); err != nil {
		return nil, Config{}, fmt.Errorf("reading ConfigMap %s/%s: %w", c.Namespace, ConfigName, err)
	}
	cfg, err := ParseConfig(&cm)
	return &cm, cfg, err
}

// pruneWait is how long until the next prune may start: while one is
// not finished, pruneRecheck; else what is left of schedule since the
// newest one was made; 0 when due (or there was none).
func (c *Controller) pruneWait(ctx context.Context, schedule time.Duration, now time.Time) (time.Duration, error) {
	var list pipelinev1.TaskRunList
	if err := c.APIReader.List(ctx, &list, client.InNamespace(c.Namespace),
		client.MatchingLabels{LabelRunsManagedBy: ManagedBy, LabelTask: taskPrune}); err != nil {
		return 0, fmt.Errorf("listing the prune TaskRuns: %w", err)
	}
	var last time.Time
	for i := range list.Items {
		tr := &list.Items[i]
		if !tr.IsDone() {
			return pruneRecheck, nil
		}
		at, err := time.Parse(time.RFC3339Nano, tr.Annotations[AnnotCreated])
		if err != nil {
			at = tr.CreationTimestamp.Time
		}
		if at.After(last) {
			last = at
		}
	}
	if last.IsZero() {
		return 0, nil
	}
	return max(last.Add(schedule).Sub(now), 0), nil
}

// runsBetweenBuildAndRollout names the runs not finished whose
// image-build TaskRun succeeded and whose rollout TaskRun has not
// finished (or not started), with their pools.
func (c *Controller) runsBetweenBuildAndRollout(ctx context.Context) ([]string, error) {
	var runs pipelinev1.PipelineRunList
	if err := c.APIReader.List(ctx, &runs, client.InNamespace(c.Namespace), client.MatchingLabels{LabelRunsManagedBy: ManagedBy}); err != nil {
		return nil, fmt.Errorf("listing PipelineRuns: %w", err)
	}
	var out []string
	for i := range runs.Items {
		r := &runs.Items[i]
		if r.IsDone() {
			continue
		}
		built, err := c.childDone(ctx, r, "image-build", true)
		if err != nil || !built {
			if err != nil {
				return nil, err
			}
			continue
		}
		rolled, err := c.childDone(ctx, r, "rollout", false)
		if err != nil {
			return nil, err
		}
		if !rolled {
			out = append(out, fmt.Sprintf("pool %s's run %s", r.Labels[LabelPool], r.Name))
		}
	}
	slices.Sort(out)
	return out, nil
}

// childDone reports whether r's TaskRun of pipeline task task finished
// (and, with mustSucceed, succeeded); a TaskRun not made yet has not.
func (c *Controller) childDone(ctx context.Context, r *pipelinev1.PipelineRun, task string, mustSucceed bool) (bool, error) {
	for _, ch := range r.Status.ChildReferences {
		if ch.PipelineTaskName != task || ch.Kind != "TaskRun" {
			continue
		}
		var tr pipelinev1.TaskRun
		err := c.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ch.Name}, &tr)
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading TaskRun %s of PipelineRun %s: %w", ch.Name, r.Name, err)
		}
		if mustSucceed {
			return tr.IsSuccessful(), nil
		}
		return tr.IsDone(), nil
	}
	return false, nil
}

// pruneWorkspaces declares the workspaces the cluster's settings may bind
// on a prune (clusterRun): kiln-prune's registries and registry-auth.
var pruneWorkspaces = &pipelinev1.Pipeline{Spec: pipelinev1.PipelineSpec{Workspaces: []pipelinev1.PipelineWorkspaceDeclaration{
	{Name: WorkspaceRegistries}, {Name: WorkspaceRegistryAuth},
}}}

// pruneBound are kiln-config's workspaces a prune binds as they are.
var pruneBound = []string{"public-key", WorkspaceRegistryAuth, WorkspaceRegistries}

// BuildPruneRun is the scheduled prune's TaskRun: kiln-prune with
// kiln-config's repository, the retention block's keep-per-pool and
// apply, kiln-config's kiln-image, public-key, registry-auth and
// registries, and an emptyDir work folder (the prune's report only).
func BuildPruneRun(cfg Config, namespace string, now time.Time) *pipelinev1.TaskRun {
	params := pipelinev1.Params{
		{Name: "repository", Value: *pipelinev1.NewStructuredValues(cfg.Repository)},
		{Name: "keep-per-pool", Value: *pipelinev1.NewStructuredValues(strconv.Itoa(cfg.Retention.KeepPerPool))},
		{Name: "apply", Value: *pipelinev1.NewStructuredValues(strconv.FormatBool(cfg.Retention.Apply))},
	}
	if img, ok := cfg.Params[paramStepsImage]; ok {
		params = append(params, pipelinev1.Param{Name: paramStepsImage, Value: *pipelinev1.NewStructuredValues(img)})
	}
	ws := []pipelinev1.WorkspaceBinding{{Name: "work", EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	for _, w := range cfg.Workspaces {
		if slices.Contains(pruneBound, w.Name) {
			ws = append(ws, *w.DeepCopy())
		}
	}
	tr := &pipelinev1.TaskRun{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kiln-prune-" + now.UTC().Format("20060102-150405"), Namespace: namespace,
			Labels:      map[string]string{LabelRunsManagedBy: ManagedBy, LabelTask: taskPrune},
			Annotations: map[string]string{AnnotCreated: now.UTC().Format(time.RFC3339Nano)},
		},
		Spec: pipelinev1.TaskRunSpec{
			TaskRef: &pipelinev1.TaskRef{Name: PruneTask}, Params: params, Workspaces: ws,
			Timeout: &metav1.Duration{Duration: cfg.Timeout},
		},
	}
	if cfg.ServiceAccountPrefix != "" {
		tr.Spec.ServiceAccountName = cfg.ServiceAccountPrefix + taskPrune
	}
	if cfg.PodTemplate != nil {
		tr.Spec.PodTemplate = cfg.PodTemplate.DeepCopy()
	}
	return tr
}

// applyToTaskRun adds the cluster's settings to a TaskRun as
// ClusterRun.apply does to a PipelineRun: kiln-config's bindings win.
func applyToTaskRun(r ClusterRun, tr *pipelinev1.TaskRun) {
	pr := &pipelinev1.PipelineRun{}
	pr.Spec.Workspaces = tr.Spec.Workspaces
	pr.Spec.TaskRunTemplate.PodTemplate = tr.Spec.PodTemplate
	r.apply(pr)
	tr.Spec.Workspaces = pr.Spec.Workspaces
	tr.Spec.PodTemplate = pr.Spec.TaskRunTemplate.PodTemplate
}

// validateTaskRun runs Tekton's own validation, as validateRun does for
// PipelineRuns.
func validateTaskRun(ctx context.Context, tr *pipelinev1.TaskRun) error {
	cp := tr.DeepCopy()
	cp.SetDefaults(ctx)
	if err := cp.Validate(ctx); err != nil {
		return fmt.Errorf("TaskRun %s does not pass Tekton's validation (check ConfigMap %s): %w", tr.Name, ConfigName, err)
	}
	return nil
}

// event records an event on kiln-config, when there is a recorder.
func (c *Controller) event(cm *corev1.ConfigMap, kind, reason, msg string) {
	if c.Recorder != nil && cm != nil {
		c.Recorder.Event(cm, kind, reason, msg)
	}
}
