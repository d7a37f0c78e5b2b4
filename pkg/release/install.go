package release

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager owns what Install applies (server-side apply).
const FieldManager = "kiln-install"

// InventoryName is the ConfigMap, in the trigger's namespace, listing what
// the last install applied: the next install deletes what it lists and
// the new release no longer has, as kubectl's ApplySet does with its
// parent object (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/#alternative-kubectl-apply-f-directory-prune).
const InventoryName = "kiln-install-inventory"

// inventoryKey holds the list in the inventory ConfigMap.
const inventoryKey = "objects"

// OptionalGroups are API groups whose kinds config/ ships for clusters
// that have them: on a cluster that serves no such kind, Install leaves
// the object out and says so, as an admin without the monitoring stack
// would delete the PrometheusRule.
var OptionalGroups = map[string]bool{"monitoring.coreos.com": true}

// ObjectRef names one applied object.
type ObjectRef struct {
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func refOf(o *unstructured.Unstructured) ObjectRef {
	gvk := o.GroupVersionKind()
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (r ObjectRef) String() string {
	k := r.Kind
	if r.Group != "" {
		k += "." + r.Group
	}
	if r.Namespace != "" {
		return k + " " + r.Namespace + "/" + r.Name
	}
	return k + " " + r.Name
}

// InstallResult says what Install did.
type InstallResult struct {
	Applied, Skipped, Pruned []ObjectRef
	// Relabeled are the runs of an older kiln given today's run labels.
	Relabeled []string
}

// applyRank puts namespaces first, then CRDs, so that everything after
// them has its namespace and its kind; pruning goes in reverse.
func applyRank(kind string) int {
	switch kind {
	case "Namespace":
		return 0
	case "CustomResourceDefinition":
		return 1
	}
	return 2
}

// Install applies objs (Render's output) with server-side apply as
// FieldManager, then deletes what the previous install's inventory lists
// and objs lack, relabels the runs an older trigger made, and records the
// new inventory in the trigger's namespace. log receives one line per
// skipped or pruned object.
func Install(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, log io.Writer) (*InstallResult, error) {
	ns, err := triggerNamespace(objs)
	if err != nil {
		return nil, err
	}
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(sorted, func(i, j int) bool { return applyRank(sorted[i].GetKind()) < applyRank(sorted[j].GetKind()) })
	res := &InstallResult{}
	for _, o := range sorted {
		ref := refOf(o)
		o = o.DeepCopy()
		o.SetManagedFields(nil)
		o.SetResourceVersion("")
		err := c.Patch(ctx, o, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership)
		if meta.IsNoMatchError(err) && OptionalGroups[ref.Group] {
			fmt.Fprintf(log, "skipped %s: the cluster serves no %s\n", ref, ref.Group)
			res.Skipped = append(res.Skipped, ref)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("applying %s: %w", ref, err)
		}
		res.Applied = append(res.Applied, ref)
	}
	old, err := readInventory(ctx, c, ns)
	if err != nil {
		return res, err
	}
	if res.Pruned, err = prune(ctx, c, old, res.Applied, log); err != nil {
		return res, err
	}
	if res.Relabeled, err = RelabelLegacyRuns(ctx, c, ns); err != nil {
		return res, err
	}
	return res, writeInventory(ctx, c, ns, res.Applied)
}

// triggerNamespace is the namespace of the kiln-trigger Deployment: where
// the trigger makes its runs and where the inventory lives.
func triggerNamespace(objs []*unstructured.Unstructured) (string, error) {
	for _, o := range objs {
		if o.GetKind() == "Deployment" && o.GetName() == TriggerName && o.GetNamespace() != "" {
			return o.GetNamespace(), nil
		}
	}
	return "", fmt.Errorf("installing kiln: the rendered install has no namespaced Deployment %s", TriggerName)
}

// prune deletes what old lists and applied lacks, in reverse apply order:
// a removed CRD goes last, after any object of its kind.
func prune(ctx context.Context, c client.Client, old, applied []ObjectRef, log io.Writer) ([]ObjectRef, error) {
	keep := map[string]bool{}
	for _, r := range applied {
		keep[r.key()] = true
	}
	var gone []ObjectRef
	for _, r := range old {
		if !keep[r.key()] {
			gone = append(gone, r)
		}
	}
	sort.SliceStable(gone, func(i, j int) bool { return applyRank(gone[i].Kind) > applyRank(gone[j].Kind) })
	var pruned []ObjectRef
	for _, r := range gone {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind})
		u.SetNamespace(r.Namespace)
		u.SetName(r.Name)
		err := c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return pruned, fmt.Errorf("pruning %s, which this release no longer has: %w", r, err)
		}
		fmt.Fprintf(log, "pruned %s: not in this release\n", r)
		pruned = append(pruned, r)
	}
	return pruned, nil
}

// key identifies an object across versions of its kind.
func (r ObjectRef) key() string {
	return strings.Join([]string{r.Group, r.Kind, r.Namespace, r.Name}, "/")
}

// maxInventory caps the inventory read back: config/ has about 100
// objects of some 150 bytes each.
const maxInventory = 512 << 10

func readInventory(ctx context.Context, c client.Client, ns string) ([]ObjectRef, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: InventoryName}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the install inventory %s/%s: %w", ns, InventoryName, err)
	}
	data := cm.Data[inventoryKey]
	if len(data) > maxInventory {
		return nil, fmt.Errorf("reading the install inventory %s/%s: field data.%s is over %d bytes", ns, InventoryName, inventoryKey, maxInventory)
	}
	var refs []ObjectRef
	if err := json.Unmarshal([]byte(data), &refs); err != nil {
		return nil, fmt.Errorf("reading the install inventory %s/%s: field data.%s: %w", ns, InventoryName, inventoryKey, err)
	}
	for i, r := range refs {
		if r.Version == "" || r.Kind == "" || r.Name == "" {
			return nil, fmt.Errorf("reading the install inventory %s/%s: entry %d lacks version, kind or name", ns, InventoryName, i)
		}
	}
	return refs, nil
}

func writeInventory(ctx context.Context, c client.Client, ns string, refs []ObjectRef) error {
	b, err := json.MarshalIndent(refs, "", " ")
	if err != nil {
		return err
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetNamespace(ns)
	cm.SetName(InventoryName)
	cm.SetLabels(map[string]string{"app.kubernetes.io/part-of": "kiln", "app.kubernetes.io/managed-by": FieldManager})
	if err := unstructured.SetNestedField(cm.Object, map[string]any{inventoryKey: string(b)}, "data"); err != nil {
		return err
	}
	if err := c.Patch(ctx, cm, client.Apply, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("writing the install inventory %s/%s: %w", ns, InventoryName, err)
	}
	return nil
}
