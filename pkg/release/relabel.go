package release

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Today's run labels, pkg/trigger's LabelRunsManagedBy, LabelFingerprint,
// LabelPipeline and LabelGitRevision, and its ManagedBy value (a test
// holds them equal; pkg/trigger's tests import this package through
// test/install, so it cannot import pkg/trigger).
const (
	LabelRunsManagedBy = "run.kiln.dev/managed-by"
	LabelFingerprint   = "run.kiln.dev/fingerprint"
	LabelPipeline      = "run.kiln.dev/pipeline"
	LabelGitRevision   = "run.kiln.dev/git-revision"
	ManagedBy          = "kiln-trigger"
)

// Run labels of kiln v0.1.0's trigger, before run labels other than pool
// and trigger moved under run.kiln.dev/ (pkg/trigger's LabelRunsManagedBy
// says why). A trigger selects its runs by its own keys only, so without
// a relabel it would not see an older kiln's run still in rollout and
// would start a second rollout of the same pool beside it.
var legacyRunLabels = map[string]string{
	"kiln.dev/fingerprint":  LabelFingerprint,
	"kiln.dev/pipeline":     LabelPipeline,
	"kiln.dev/git-revision": LabelGitRevision,
}

// LegacyManagedBy selected an older trigger's runs (with value ManagedBy).
const LegacyManagedBy = "app.kubernetes.io/managed-by"

var pipelineRunGVK = schema.GroupVersionKind{Group: "tekton.dev", Version: "v1", Kind: "PipelineRunList"}

// RelabelLegacyRuns gives every PipelineRun an older trigger made in ns
// (app.kubernetes.io/managed-by=kiln-trigger, no run.kiln.dev/managed-by)
// today's run labels, moving each legacy key to its new one, so the new
// trigger counts the run: one in rollout keeps the pool's new run pending
// until it finishes, one not yet in rollout is superseded like any run
// for other inputs. It returns the runs it relabeled, by name. A cluster
// without Tekton's API has no runs.
func RelabelLegacyRuns(ctx context.Context, c client.Client, ns string) ([]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(pipelineRunGVK)
	err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LegacyManagedBy: ManagedBy})
	if meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing the PipelineRuns of an older kiln in %s: %w", ns, err)
	}
	var done []string
	for _, pr := range list.Items {
		labels := pr.GetLabels()
		if labels[LabelRunsManagedBy] != "" {
			continue
		}
		patch := map[string]any{LabelRunsManagedBy: ManagedBy, LegacyManagedBy: nil}
		for old, cur := range legacyRunLabels {
			if v, ok := labels[old]; ok {
				patch[cur], patch[old] = v, nil
			}
		}
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": patch}})
		if err != nil {
			return done, err
		}
		if err := c.Patch(ctx, &pr, client.RawPatch(types.MergePatchType, b)); err != nil {
			return done, fmt.Errorf("relabeling PipelineRun %s/%s of an older kiln: %w", ns, pr.GetName(), err)
		}
		done = append(done, pr.GetName())
	}
	sort.Strings(done)
	return done, nil
}
