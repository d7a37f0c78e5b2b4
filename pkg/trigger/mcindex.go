package trigger

import (
	"context"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mcLabelIndex indexes cached MachineConfigs by each of their labels, as
// "key=value". A cluster holds thousands of MCs and every edit reads one
// pool's; without the index each read walks them all.
const mcLabelIndex = "kiln.dev/machineconfig-label"

func indexMachineConfigs(ctx context.Context, fi client.FieldIndexer) error {
	err := fi.IndexField(ctx, &mcfgv1.MachineConfig{}, mcLabelIndex, func(o client.Object) []string {
		out := make([]string, 0, len(o.GetLabels()))
		for k, v := range o.GetLabels() {
			out = append(out, k+"="+v)
		}
		return out
	})
	if err != nil {
		return fmt.Errorf("indexing MachineConfigs by label: %w", err)
	}
	return nil
}

// indexKeys picks the index keys that find every MC sel can match: those
// of the requirement naming the fewest values among sel's equality and In
// requirements (an MC matching sel carries one of them). ok is false when
// sel has no such requirement (only Exists, DoesNotExist, NotIn, !=, or a
// numeric comparison): the index cannot narrow it. An MCO pool's selector
// is a role matchLabels or In in practice; any other still works, by a
// full scan.
func indexKeys(sel labels.Selector) (keys []string, ok bool) {
	reqs, _ := sel.Requirements()
	var best *labels.Requirement
	for i := range reqs {
		switch reqs[i].Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			if best == nil || reqs[i].Values().Len() < best.Values().Len() {
				best = &reqs[i]
			}
		}
	}
	if best == nil {
		return nil, false
	}
	for _, v := range best.Values().List() {
		keys = append(keys, best.Key()+"="+v)
	}
	return keys, true
}

// listMachineConfigs returns the MCs sel matches. They are shared with
// the cache when the reader is one (no deep copies): callers must not
// modify them. indexed says the reader serves mcLabelIndex (the manager's
// cache); otherwise (a live client) it is one label-selector list.
func listMachineConfigs(ctx context.Context, r client.Reader, sel labels.Selector, indexed bool) ([]*mcfgv1.MachineConfig, error) {
	if _, selectable := sel.Requirements(); !selectable {
		return nil, nil // labels.Nothing(): an empty pool selector
	}
	keys, ok := indexKeys(sel)
	if !indexed || !ok {
		keys = []string{""}
	}
	var out []*mcfgv1.MachineConfig
	for _, k := range keys {
		opts := []client.ListOption{client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy}
		if k != "" {
			opts = append(opts, client.MatchingFields{mcLabelIndex: k})
		}
		var mcs mcfgv1.MachineConfigList
		if err := r.List(ctx, &mcs, opts...); err != nil {
			return nil, fmt.Errorf("listing MachineConfigs matching %q: %w", sel, err)
		}
		// The keys name one label with distinct values: no MC is in two
		// lists.
		for i := range mcs.Items {
			out = append(out, &mcs.Items[i])
		}
	}
	return out, nil
}
