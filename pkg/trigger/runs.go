package trigger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"
)

// Labels and annotations on the PipelineRuns the trigger makes.
//
// The Tekton Dashboard shows a run's first four labels in the order the
// apiserver sends them, which is by key, and hides the rest behind "+N".
// A run also carries its Pipeline's labels (Tekton copies them), of which
// app.kubernetes.io/version sorts first. So pool and trigger are the only
// kiln.dev/ keys, and kiln's other run labels live under run.kiln.dev/,
// which sorts after them: the header reads version, pool, trigger.
const (
	LabelPool    = "kiln.dev/pool"
	LabelTrigger = "kiln.dev/trigger"
	// LabelFingerprint is the full fingerprint of the run's inputs: decide
	// finds a pool's run for its inputs by it.
	LabelFingerprint = "run.kiln.dev/fingerprint"
	// LabelGitRevision is the commit a GitOps run builds (config/samples).
	LabelGitRevision = "run.kiln.dev/git-revision"
	// LabelPipeline tells node-image runs from standalone bootimages runs.
	LabelPipeline = "run.kiln.dev/pipeline"
	// LabelRunsManagedBy selects the trigger's runs for its cache. It is
	// not app.kubernetes.io/managed-by, which would sort first in the
	// Dashboard's header (and Tekton sets that key on TaskRuns itself).
	LabelRunsManagedBy = "run.kiln.dev/managed-by"
	// LabelManagedBy marks the other objects the trigger owns (the
	// registries' copies).
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "kiln-trigger"
	// AnnotParts records each fingerprint part (see Fingerprint.Changed).
	AnnotParts = "kiln.dev/fingerprint-parts"
	// AnnotInputs records what the parts hash, by name (see
	// Fingerprint.Describe), and AnnotChanges the one line that says what
	// changed since the previous run, which is also the run's changes
	// param.
	AnnotInputs  = "kiln.dev/inputs"
	AnnotChanges = "kiln.dev/changes"
	// AnnotBootImages records the coreos-bootimages digest a run with the
	// bootimages stage was made under, so the standalone bootimages
	// pipeline knows the stream is taken care of.
	AnnotBootImages = "kiln.dev/bootimages"
	// AnnotSupersededBy marks a run the trigger cancelled for newer
	// inputs, with their fingerprint.
	AnnotSupersededBy = "kiln.dev/superseded-by"
	// AnnotCreated is when the trigger made the run, to the nanosecond.
	AnnotCreated = "kiln.dev/created"
	// AnnotRebuild on a MachineConfigPool asks for a run of unchanged
	// inputs: set it to any new value.
	AnnotRebuild = "kiln.dev/rebuild"

	pipelineNodeImage  = "node-image"
	pipelineBootImages = "bootimages"

	// maxRunName is a label value's limit: Tekton labels every TaskRun with
	// its PipelineRun's name.
	maxRunName = 63
)

// RunName names pool's run for fingerprint sum, made for trigger: pool and
// trigger are what the Dashboard's and tkn's run lists show of a run, as
// they show no labels. The name is not what keeps one run per fingerprint:
// decide finds runs by the fingerprint label, on a live list, and
// controller-runtime never reconciles one pool twice at once. A name too
// long for a label value drops the trigger, then shortens the pool; a
// shortened pool is followed by a hash of its whole name, so that two
// pools whose names share a prefix never share a run name (local mode
// names each run's folder after it). Names that fit are as they were.
func RunName(pool, trigger, sum string) string {
	if n := "kiln-" + pool + "-" + trigger + "-" + sum[:10]; len(n) <= maxRunName {
		return n
	}
	if n := "kiln-" + pool + "-" + sum[:10]; len(n) <= maxRunName {
		return n
	}
	h := sha256.Sum256([]byte(pool))
	tag := hex.EncodeToString(h[:])[:poolHashLen]
	keep := maxRunName - len("kiln---") - poolHashLen - 10
	return "kiln-" + strings.TrimRight(pool[:keep], "-.") + "-" + tag + "-" + sum[:10]
}

// poolHashLen is how many hex digits of the pool name's SHA-256 a
// shortened run name carries.
const poolHashLen = 8

// rolloutTasks are the pipeline tasks that change the cluster. A run that
// reached one is allowed to finish; cancelling it mid-way would leave a
// pool half-updated.
var rolloutTasks = map[string]bool{"rollout": true, "bootimages": true}

// runState is what the trigger needs to know of a PipelineRun.
type runState int

const (
	runPending runState = iota // spec.status PipelineRunPending
	runActive                  // started or about to, before rollout
	runRollout                 // reached rollout or bootimages
	runDone                    // finished, or asked to stop
)

func stateOf(pr *pipelinev1.PipelineRun) runState {
	switch {
	case pr.IsDone():
		return runDone
	case pr.Spec.Status == pipelinev1.PipelineRunSpecStatusPending:
		return runPending
	case reachedRollout(pr):
		// Checked before the cancel flags: a run that reached rollout
		// finishes its rollout and its finally tasks even when told to stop.
		return runRollout
	case pr.Spec.Status != "":
		return runDone
	}
	return runActive
}

func reachedRollout(pr *pipelinev1.PipelineRun) bool {
	for _, c := range pr.Status.ChildReferences {
		if rolloutTasks[c.PipelineTaskName] {
			return true
		}
	}
	return false
}

func succeeded(pr *pipelinev1.PipelineRun) bool {
	c := pr.Status.GetCondition(apis.ConditionSucceeded)
	return c != nil && c.IsTrue()
}

// newestFirst sorts runs newest first. creationTimestamp has a resolution
// of one second, and a burst makes several runs a second, so the
// trigger's own kiln.dev/created (nanoseconds) decides when present.
func newestFirst(runs []*pipelinev1.PipelineRun) {
	at := func(r *pipelinev1.PipelineRun) time.Time {
		if t, err := time.Parse(time.RFC3339Nano, r.Annotations[AnnotCreated]); err == nil {
			return t
		}
		return r.CreationTimestamp.Time
	}
	sort.SliceStable(runs, func(i, j int) bool {
		ti, tj := at(runs[i]), at(runs[j])
		if !ti.Equal(tj) {
			return tj.Before(ti)
		}
		return runs[i].Name > runs[j].Name
	})
}

// RunSpec is what the builder needs for one node-image run.
type RunSpec struct {
	Namespace   string
	Pool        string
	Fingerprint Fingerprint
	Trigger     string
	// Changes says what changed since the pool's previous run
	// (Fingerprint.Describe).
	Changes string
	Pending bool
	// KmodRebuild asks kmod-build to rebuild an existing image (the KMM day-0
	// proposal's "Cluster upgrade").
	KmodRebuild bool
	// BootImages is the coreos-bootimages digest when the run updates boot
	// images, else empty.
	BootImages string
	// Tasks are the Pipeline's task names (tasks and finally), for the
	// per-task ServiceAccounts.
	Tasks []string
}

// BuildRun makes the PipelineRun for s under config c.
func BuildRun(c Config, s RunSpec) *pipelinev1.PipelineRun {
	params := map[string]string{}
	for k, v := range c.Params {
		params[k] = v
	}
	params["pool"] = s.Pool
	params["repository"] = c.RepositoryFor(s.Pool)
	params["update-boot-images"] = strconv.FormatBool(s.BootImages != "")
	params["trigger"] = s.Trigger
	params["changes"] = s.Changes
	if s.KmodRebuild {
		params["kmod-rebuild"] = "true"
	}
	// kiln-config's per-pool mode wins over a drift-gate in params.
	if mode := c.DriftGateFor(s.Pool); mode != "" {
		params["drift-gate"] = mode
	}
	pr := newRun(c, s.Namespace, RunName(s.Pool, s.Trigger, s.Fingerprint.Sum), c.Pipeline, params, s.Tasks)
	pr.Labels[LabelPool] = s.Pool
	pr.Labels[LabelFingerprint] = s.Fingerprint.Sum
	pr.Labels[LabelTrigger] = s.Trigger
	pr.Labels[LabelPipeline] = pipelineNodeImage
	pr.Annotations[AnnotParts] = encodeParts(s.Fingerprint.Parts)
	pr.Annotations[AnnotInputs] = encodeInputs(s.Fingerprint.Inputs)
	pr.Annotations[AnnotChanges] = s.Changes
	if s.BootImages != "" {
		pr.Annotations[AnnotBootImages] = s.BootImages
	}
	if s.Pending {
		pr.Spec.Status = pipelinev1.PipelineRunSpecStatusPending
	}
	return pr
}

// BuildBootImagesRun makes the standalone bootimages run for the
// coreos-bootimages (and MachineConfiguration) digest sum.
func BuildBootImagesRun(c Config, namespace, sum string, tasks []string) *pipelinev1.PipelineRun {
	params := map[string]string{}
	if v, ok := c.Params[paramStepsImage]; ok {
		params[paramStepsImage] = v
	}
	pr := newRun(c, namespace, "kiln-bootimages-"+sum[:10], c.BootImagesPipeline, params, tasks)
	pr.Labels[LabelFingerprint] = sum
	pr.Labels[LabelTrigger] = TriggerPayload
	pr.Labels[LabelPipeline] = pipelineBootImages
	pr.Annotations[AnnotBootImages] = sum
	return pr
}

func newRun(c Config, namespace, name, pipeline string, params map[string]string, tasks []string) *pipelinev1.PipelineRun {
	pr := &pipelinev1.PipelineRun{
		TypeMeta: metav1.TypeMeta{APIVersion: pipelinev1.SchemeGroupVersion.String(), Kind: "PipelineRun"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace,
			Labels:      map[string]string{LabelRunsManagedBy: ManagedBy},
			Annotations: map[string]string{AnnotCreated: time.Now().UTC().Format(time.RFC3339Nano)},
		},
		Spec: pipelinev1.PipelineRunSpec{
			PipelineRef: &pipelinev1.PipelineRef{Name: pipeline},
			Timeouts:    &pipelinev1.TimeoutFields{Pipeline: &metav1.Duration{Duration: c.Timeout}},
			Workspaces:  append([]pipelinev1.WorkspaceBinding(nil), c.Workspaces...),
		},
	}
	if c.PodTemplate != nil {
		pr.Spec.TaskRunTemplate.PodTemplate = c.PodTemplate.DeepCopy()
	}
	for _, k := range sortedKeys(params) {
		pr.Spec.Params = append(pr.Spec.Params, pipelinev1.Param{Name: k, Value: *pipelinev1.NewStructuredValues(params[k])})
	}
	if c.ServiceAccountPrefix != "" {
		for _, t := range tasks {
			pr.Spec.TaskRunSpecs = append(pr.Spec.TaskRunSpecs, pipelinev1.PipelineTaskRunSpec{
				PipelineTaskName: t, ServiceAccountName: c.ServiceAccountPrefix + t,
			})
		}
	}
	c.Cluster.apply(pr)
	return pr
}

// validateRun applies Tekton's own defaulting and validation, so a bad
// kiln-config is reported by the trigger rather than by a stuck run.
func validateRun(ctx context.Context, pr *pipelinev1.PipelineRun) error {
	cp := pr.DeepCopy()
	cp.SetDefaults(ctx)
	if err := cp.Validate(ctx); err != nil {
		return fmt.Errorf("PipelineRun %s does not pass Tekton's validation (check ConfigMap %s): %w", pr.Name, ConfigName, err)
	}
	return nil
}

// pipelineTasks lists a Pipeline's task names, finally tasks included.
func pipelineTasks(p *pipelinev1.Pipeline) []string {
	var out []string
	for _, t := range p.Spec.Tasks {
		out = append(out, t.Name)
	}
	for _, t := range p.Spec.Finally {
		out = append(out, t.Name)
	}
	return out
}
