package prune

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/retention"
)

// ReadCluster lists what the keep set is read from: pools,
// MachineConfigs, MachineConfigNodes, ModuleDay0s, PinnedImageSets, and
// the PipelineRuns and TaskRuns of runsNamespace (kiln's runs; "" reads
// none). A cluster that does not serve MachineConfigNodes, ModuleDay0s,
// PinnedImageSets or Tekton has none;
// every other failure fails the read.
func ReadCluster(c client.Reader, runsNamespace string) func(ctx context.Context) (retention.Cluster, error) {
	return func(ctx context.Context) (retention.Cluster, error) {
		var pools mcfgv1.MachineConfigPoolList
		if err := c.List(ctx, &pools); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing MachineConfigPools: %w", err)
		}
		var mcs mcfgv1.MachineConfigList
		if err := c.List(ctx, &mcs); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing MachineConfigs: %w", err)
		}
		var nodes mcfgv1.MachineConfigNodeList
		if err := listServed(ctx, c, &nodes); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing MachineConfigNodes: %w", err)
		}
		var mds kmmv1beta1.ModuleDay0List
		if err := listServed(ctx, c, &mds); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing ModuleDay0s: %w", err)
		}
		var pins mcfgv1.PinnedImageSetList
		if err := listServed(ctx, c, &pins); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing PinnedImageSets: %w", err)
		}
		cl := retention.Cluster{Pools: pools.Items, MachineConfigs: mcs.Items, Nodes: nodes.Items, ModuleDay0s: mds.Items,
			PinnedImageSets: pins.Items}
		if runsNamespace == "" {
			return cl, nil
		}
		var runs pipelinev1.PipelineRunList
		if err := listServed(ctx, c, &runs, client.InNamespace(runsNamespace)); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing the PipelineRuns of namespace %s: %w", runsNamespace, err)
		}
		var trs pipelinev1.TaskRunList
		if err := listServed(ctx, c, &trs, client.InNamespace(runsNamespace)); err != nil {
			return retention.Cluster{}, fmt.Errorf("listing the TaskRuns of namespace %s: %w", runsNamespace, err)
		}
		cl.Runs, cl.TaskRuns = runs.Items, trs.Items
		return cl, nil
	}
}

// listServed lists, and takes a kind the cluster does not serve for none.
func listServed(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.List(ctx, list, opts...); err != nil && !meta.IsNoMatchError(err) {
		return err
	}
	return nil
}
