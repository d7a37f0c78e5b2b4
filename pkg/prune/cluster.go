package prune

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/retention"
)

// ReadCluster lists what the keep set is read from. A cluster that does
// not serve MachineConfigNodes has none; every other failure fails the
// read.
func ReadCluster(c client.Reader) func(ctx context.Context) (retention.Cluster, error) {
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
		if err := c.List(ctx, &nodes); err != nil && !meta.IsNoMatchError(err) {
			return retention.Cluster{}, fmt.Errorf("listing MachineConfigNodes: %w", err)
		}
		return retention.Cluster{Pools: pools.Items, MachineConfigs: mcs.Items, Nodes: nodes.Items}, nil
	}
}
