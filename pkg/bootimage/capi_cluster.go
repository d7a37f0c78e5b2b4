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

var _ CAPICluster = Kube{}

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
