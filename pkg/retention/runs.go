package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
)

// The trigger's labels on upgrade-ahead runs (pkg/trigger): the same
// strings, as a prune reads them from runs the trigger made.
const (
	LabelPool          = "kiln.dev/pool"
	LabelTrigger       = "kiln.dev/trigger"
	LabelTargetRelease = "run.kiln.dev/target-release"
	// AnnotCreated is when the trigger made the run, to the nanosecond
	// (RFC 3339): creationTimestamp has whole seconds only.
	AnnotCreated = "kiln.dev/created"
	// TriggerUpgradeAhead is the kiln.dev/trigger of an upgrade-ahead run:
	// it builds a pool's next image for a release the cluster is offered
	// and rolls nothing out; the upgrade rolls it out later.
	TriggerUpgradeAhead = "upgrade-ahead"
)

// Task results that name an image a run pushed, as repository and digest
// (tasks/image-build.yaml, kmod-build.yaml, kmod-sign.yaml).
var imageResults = []struct{ url, digest string }{
	{"IMAGE_URL", "IMAGE_DIGEST"},
	{"KMOD_IMAGE_URL", "KMOD_IMAGE_DIGEST"},
}

// RunImages names the images kiln's runs reported and may still roll out:
// those of every PipelineRun not finished (running or queued: its
// rollout is still to come), and those of the newest finished
// upgrade-ahead run of each pool and target release (the upgrade rolls
// them out). A run's images are what its TaskRuns (tekton.dev/pipelineRun
// label) report as IMAGE_URL@IMAGE_DIGEST and
// KMOD_IMAGE_URL@KMOD_IMAGE_DIGEST. The order is fixed (by run name).
func RunImages(runs []pipelinev1.PipelineRun, taskRuns []pipelinev1.TaskRun) []Named {
	byRun := map[string][]pipelinev1.TaskRun{}
	for _, tr := range taskRuns {
		if pr := tr.Labels[pipeline.PipelineRunLabelKey]; pr != "" {
			byRun[tr.Namespace+"/"+pr] = append(byRun[tr.Namespace+"/"+pr], tr)
		}
	}
	newest := newestAhead(runs)
	var out []Named
	for _, pr := range sortedBy(runs, func(r pipelinev1.PipelineRun) string { return r.Namespace + "/" + r.Name }) {
		why := ""
		switch {
		case !pr.IsDone():
			why = fmt.Sprintf("PipelineRun %s/%s, not finished", pr.Namespace, pr.Name)
		case newest[aheadKey(&pr)] == pr.Namespace+"/"+pr.Name:
			why = fmt.Sprintf("PipelineRun %s/%s, the newest upgrade-ahead run of pool %s for %s",
				pr.Namespace, pr.Name, pr.Labels[LabelPool], pr.Labels[LabelTargetRelease])
		default:
			continue
		}
		trs := byRun[pr.Namespace+"/"+pr.Name]
		slices.SortFunc(trs, func(a, b pipelinev1.TaskRun) int { return cmp.Compare(a.Name, b.Name) })
		for _, tr := range trs {
			for _, img := range reportedImages(tr) {
				out = append(out, Named{Image: img, Reason: fmt.Sprintf("%s: %s's image", why, taskOf(tr))})
			}
		}
	}
	return out
}

// aheadKey groups finished upgrade-ahead runs by pool and target release;
// "" for any other run.
func aheadKey(pr *pipelinev1.PipelineRun) string {
	if pr.Labels[LabelTrigger] != TriggerUpgradeAhead || !pr.IsDone() {
		return ""
	}
	return pr.Namespace + "\x00" + pr.Labels[LabelPool] + "\x00" + pr.Labels[LabelTargetRelease]
}

// newestAhead maps each pool and target to its newest finished
// upgrade-ahead run (namespace/name), by creation time (createdAt) then
// name, as the trigger orders its runs.
func newestAhead(runs []pipelinev1.PipelineRun) map[string]string {
	best := map[string]*pipelinev1.PipelineRun{}
	for i := range runs {
		r := &runs[i]
		k := aheadKey(r)
		if k == "" {
			continue
		}
		if b := best[k]; b == nil || cmp.Or(createdAt(r).Compare(createdAt(b)), cmp.Compare(r.Name, b.Name)) > 0 {
			best[k] = r
		}
	}
	out := make(map[string]string, len(best))
	for k, r := range best {
		out[k] = r.Namespace + "/" + r.Name
	}
	return out
}

// createdAt is when the trigger made r, else its creation timestamp.
func createdAt(r *pipelinev1.PipelineRun) time.Time {
	if t, err := time.Parse(time.RFC3339Nano, r.Annotations[AnnotCreated]); err == nil {
		return t
	}
	return r.CreationTimestamp.Time
}

// reportedImages are the images tr's results name, repository@digest.
func reportedImages(tr pipelinev1.TaskRun) []string {
	res := map[string]string{}
	for _, r := range tr.Status.Results {
		res[r.Name] = strings.TrimSpace(r.Value.StringVal)
	}
	var out []string
	for _, p := range imageResults {
		if res[p.url] != "" && res[p.digest] != "" {
			out = append(out, res[p.url]+"@"+res[p.digest])
		}
	}
	return out
}

// taskOf is the pipeline task a TaskRun ran, else its own name.
func taskOf(tr pipelinev1.TaskRun) string {
	if t := tr.Labels[pipeline.PipelineTaskLabelKey]; t != "" {
		return t
	}
	return "TaskRun " + tr.Name
}

// taskImageBuild is the node-image Pipeline's task that decides whether a
// run reuses an image or builds one (pipelines/node-image.yaml); kmod-build
// and kmod-sign, which reuse kmod images, run before it.
const taskImageBuild = "image-build"

// ReusePending names the runs that may still pick an image kiln built for
// reuse without having reported it: PipelineRuns not finished whose
// image-build has not finished (queued runs, whose Pipeline is not
// resolved yet, included). Until such a run reports its image, no image
// of kiln's is safe to delete: the run may prove one (a revert to earlier
// inputs finds its image by fingerprint) and roll it out. Runs whose
// Pipeline has no image-build task never reuse. The order is fixed.
func ReusePending(runs []pipelinev1.PipelineRun, taskRuns []pipelinev1.TaskRun) []string {
	built := map[string]bool{}
	for _, tr := range taskRuns {
		if tr.Labels[pipeline.PipelineTaskLabelKey] == taskImageBuild && tr.IsDone() {
			built[tr.Namespace+"/"+tr.Labels[pipeline.PipelineRunLabelKey]] = true
		}
	}
	var out []string
	for _, pr := range sortedBy(runs, func(r pipelinev1.PipelineRun) string { return r.Namespace + "/" + r.Name }) {
		key := pr.Namespace + "/" + pr.Name
		if pr.IsDone() || built[key] || !buildsImages(&pr) {
			continue
		}
		out = append(out, fmt.Sprintf("PipelineRun %s has not finished image-build and may yet reuse it", key))
	}
	return out
}

// buildsImages reports whether pr's Pipeline has an image-build task; a run
// not started yet has no resolved Pipeline and counts as one that does.
func buildsImages(pr *pipelinev1.PipelineRun) bool {
	spec := pr.Status.PipelineSpec
	if spec == nil {
		return true
	}
	return slices.ContainsFunc(spec.Tasks, func(t pipelinev1.PipelineTask) bool { return t.Name == taskImageBuild })
}
