package bootimage

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CAPICluster is the part of a Cluster that serves Cluster API objects. It
// is separate from Cluster so that the Machine API path keeps its small,
// typed interface.
type CAPICluster interface {
	CAPIMachineSets(ctx context.Context, namespace string, sel labels.Selector) ([]*unstructured.Unstructured, error)
	CAPIMachineSet(ctx context.Context, namespace, name string) (*unstructured.Unstructured, error)
	CAPIMachineDeployments(ctx context.Context, namespace string) ([]*unstructured.Unstructured, error)
	// InfraTemplate reads a template; a missing one is a *NotFoundError.
	InfraTemplate(ctx context.Context, ref TemplateRef) (*unstructured.Unstructured, error)
	// CreateInfraTemplate fails with an AlreadyExists API error when the
	// name is taken.
	CreateInfraTemplate(ctx context.Context, t *unstructured.Unstructured) error
	// PatchCAPIMachineSet applies a JSON merge patch (see PatchMachineSet).
	PatchCAPIMachineSet(ctx context.Context, ms *unstructured.Unstructured, patch []byte) error
	// DeleteInfraTemplate deletes t if it is still the object read (UID).
	DeleteInfraTemplate(ctx context.Context, t *unstructured.Unstructured) error
}

var (
	_ CAPICluster = Kube{}
	_ CAPICluster = (*Dir)(nil)
)

// gvk resolves a group and kind (and optional version) to the version the
// API server serves, preferring its preferred version: references in CAPI
// v1beta2 carry no version, and v1beta1-only clusters serve no v1beta2.
func (k Kube) gvk(group, version, kind string) (schema.GroupVersionKind, error) {
	var versions []string
	if version != "" {
		versions = []string{version}
	}
	m, err := k.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: group, Kind: kind}, versions...)
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("resolving %s.%s: %w", kind, group, err)
	}
	return m.GroupVersionKind, nil
}

func (k Kube) list(ctx context.Context, kind, ns string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	gvk, err := k.gvk(CAPIGroup, "", kind)
	if err != nil {
		return nil, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
	if err := k.Client.List(ctx, l, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing Cluster API %ss in %s: %w", kind, ns, err)
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out, nil
}

// CAPIMachineSets implements CAPICluster.
func (k Kube) CAPIMachineSets(ctx context.Context, ns string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	return k.list(ctx, "MachineSet", ns, sel)
}

// CAPIMachineDeployments implements CAPICluster.
func (k Kube) CAPIMachineDeployments(ctx context.Context, ns string) ([]*unstructured.Unstructured, error) {
	return k.list(ctx, "MachineDeployment", ns, labels.Everything())
}

// CAPIMachineSet implements CAPICluster.
func (k Kube) CAPIMachineSet(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return k.getU(ctx, TemplateRef{Group: CAPIGroup, Kind: "MachineSet", Namespace: ns, Name: name})
}

// InfraTemplate implements CAPICluster.
func (k Kube) InfraTemplate(ctx context.Context, ref TemplateRef) (*unstructured.Unstructured, error) {
	return k.getU(ctx, ref)
}

func (k Kube) getU(ctx context.Context, ref TemplateRef) (*unstructured.Unstructured, error) {
	gvk, err := k.gvk(ref.Group, ref.Version, ref.Kind)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := k.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &NotFoundError{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		}
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	return u, nil
}

// CreateInfraTemplate implements CAPICluster.
func (k Kube) CreateInfraTemplate(ctx context.Context, t *unstructured.Unstructured) error {
	return k.Client.Create(ctx, t)
}

// PatchCAPIMachineSet implements CAPICluster.
func (k Kube) PatchCAPIMachineSet(ctx context.Context, ms *unstructured.Unstructured, patch []byte) error {
	return k.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, patch))
}

// DeleteInfraTemplate implements CAPICluster.
func (k Kube) DeleteInfraTemplate(ctx context.Context, t *unstructured.Unstructured) error {
	uid := t.GetUID()
	return k.Client.Delete(ctx, t, client.Preconditions{UID: &uid})
}

// Dir: Cluster API objects are kept as unstructured objects keyed by group,
// kind, namespace and name (any version); writes go to <output>/capi/.

func capiKey(group, kind, ns, name string) string { return group + "/" + kind + "/" + ns + "/" + name }

func (d *Dir) capiList(group, kind, ns string, sel labels.Selector) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, u := range d.capi {
		if u.GroupVersionKind().Group == group && u.GetKind() == kind && u.GetNamespace() == ns && sel.Matches(labels.Set(u.GetLabels())) {
			out = append(out, u.DeepCopy())
		}
	}
	return out
}

// CAPIMachineSets implements CAPICluster.
func (d *Dir) CAPIMachineSets(_ context.Context, ns string, sel labels.Selector) ([]*unstructured.Unstructured, error) {
	return d.capiList(CAPIGroup, "MachineSet", ns, sel), nil
}

// CAPIMachineDeployments implements CAPICluster.
func (d *Dir) CAPIMachineDeployments(_ context.Context, ns string) ([]*unstructured.Unstructured, error) {
	return d.capiList(CAPIGroup, "MachineDeployment", ns, labels.Everything()), nil
}

// CAPIMachineSet implements CAPICluster.
func (d *Dir) CAPIMachineSet(ctx context.Context, ns, name string) (*unstructured.Unstructured, error) {
	return d.InfraTemplate(ctx, TemplateRef{Group: CAPIGroup, Kind: "MachineSet", Namespace: ns, Name: name})
}

// InfraTemplate implements CAPICluster.
func (d *Dir) InfraTemplate(_ context.Context, ref TemplateRef) (*unstructured.Unstructured, error) {
	u, ok := d.capi[capiKey(ref.Group, ref.Kind, ref.Namespace, ref.Name)]
	if !ok {
		return nil, &NotFoundError{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	}
	return u.DeepCopy(), nil
}

// CreateInfraTemplate implements CAPICluster.
func (d *Dir) CreateInfraTemplate(_ context.Context, t *unstructured.Unstructured) error {
	gvk := t.GroupVersionKind()
	key := capiKey(gvk.Group, gvk.Kind, t.GetNamespace(), t.GetName())
	if _, ok := d.capi[key]; ok {
		return apierrors.NewAlreadyExists(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, t.GetName())
	}
	d.capi[key] = t.DeepCopy()
	return d.write("capi", gvk.Kind+"_"+t.GetNamespace()+"_"+t.GetName(), t.Object)
}

// PatchCAPIMachineSet implements CAPICluster.
func (d *Dir) PatchCAPIMachineSet(_ context.Context, ms *unstructured.Unstructured, patch []byte) error {
	key := capiKey(CAPIGroup, "MachineSet", ms.GetNamespace(), ms.GetName())
	cur, ok := d.capi[key]
	if !ok {
		return &NotFoundError{Kind: "MachineSet", Namespace: ms.GetNamespace(), Name: ms.GetName()}
	}
	doc, err := cur.MarshalJSON()
	if err != nil {
		return err
	}
	merged, err := mergePatch(doc, patch)
	if err != nil {
		return fmt.Errorf("applying patch to MachineSet %s/%s: %w", ms.GetNamespace(), ms.GetName(), err)
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(merged); err != nil {
		return err
	}
	next.SetResourceVersion(cur.GetResourceVersion()) // local files carry no server state
	d.capi[key] = next
	*ms = *next.DeepCopy()
	return d.write("capi", "MachineSet_"+next.GetNamespace()+"_"+next.GetName(), next.Object)
}

// DeleteInfraTemplate implements CAPICluster. A folder cannot express a
// deletion, so each one is a manifest under <output>/capi/deleted/: the
// GitOps change removes those objects.
func (d *Dir) DeleteInfraTemplate(_ context.Context, t *unstructured.Unstructured) error {
	gvk := t.GroupVersionKind()
	delete(d.capi, capiKey(gvk.Group, gvk.Kind, t.GetNamespace(), t.GetName()))
	stub := &unstructured.Unstructured{}
	stub.SetAPIVersion(t.GetAPIVersion())
	stub.SetKind(t.GetKind())
	stub.SetNamespace(t.GetNamespace())
	stub.SetName(t.GetName())
	return d.write("capi/deleted", gvk.Kind+"_"+t.GetNamespace()+"_"+t.GetName(), stub.Object)
}

// isCAPIGroup says whether local mode keeps a manifest of this API version
// as an unstructured Cluster API object.
func isCAPIGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && (gv.Group == CAPIGroup || gv.Group == InfraGroup)
}
