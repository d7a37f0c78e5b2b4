package bootimage

import (
	"context"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
)

// Cluster is where the stage reads its inputs and writes its changes,
// implemented once over a client (Kube): the API server's, or for a
// folder of manifests (local mode) the one kube.New returns for it.
type Cluster interface {
	MachineConfiguration(ctx context.Context) (*operatorv1.MachineConfiguration, error)
	Infrastructure(ctx context.Context) (*configv1.Infrastructure, error)
	ClusterVersion(ctx context.Context) (*configv1.ClusterVersion, error)
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	MachineSets(ctx context.Context, namespace string, sel labels.Selector) ([]machinev1beta1.MachineSet, error)
	MachineSet(ctx context.Context, namespace, name string) (*machinev1beta1.MachineSet, error)
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	// PatchMachineSet applies a JSON merge patch; a patch carrying
	// metadata.resourceVersion fails with a Conflict when ms changed.
	PatchMachineSet(ctx context.Context, ms *machinev1beta1.MachineSet, patch []byte) error
	// UpdateSecret writes a Secret read by Secret (optimistic concurrency).
	UpdateSecret(ctx context.Context, s *corev1.Secret) error
	// PatchMachineConfigurationStatus merge-patches the status subresource.
	PatchMachineConfigurationStatus(ctx context.Context, mc *operatorv1.MachineConfiguration, patch []byte) error
	// BootImageHistory reads a history; a missing one is a *NotFoundError.
	BootImageHistory(ctx context.Context, namespace, name string) (*mcfgv1alpha1.BootImageHistory, error)
	// SaveBootImageHistory creates h (no resourceVersion) or updates it.
	SaveBootImageHistory(ctx context.Context, h *mcfgv1alpha1.BootImageHistory) error
}

// Kube is a Cluster on a client of the API server or of a folder.
type Kube struct{ Client client.Client }

var _ Cluster = Kube{}

// MachineConfiguration implements Cluster.
func (k Kube) MachineConfiguration(ctx context.Context) (*operatorv1.MachineConfiguration, error) {
	mc := &operatorv1.MachineConfiguration{}
	return mc, get(ctx, k.Client, "", MachineConfigurationName, mc)
}

// Infrastructure implements Cluster.
func (k Kube) Infrastructure(ctx context.Context) (*configv1.Infrastructure, error) {
	o := &configv1.Infrastructure{}
	return o, get(ctx, k.Client, "", "cluster", o)
}

// ClusterVersion implements Cluster.
func (k Kube) ClusterVersion(ctx context.Context) (*configv1.ClusterVersion, error) {
	o := &configv1.ClusterVersion{}
	return o, get(ctx, k.Client, "", "version", o)
}

// ConfigMap implements Cluster.
func (k Kube) ConfigMap(ctx context.Context, ns, name string) (*corev1.ConfigMap, error) {
	o := &corev1.ConfigMap{}
	return o, get(ctx, k.Client, ns, name, o)
}

// MachineSets implements Cluster.
func (k Kube) MachineSets(ctx context.Context, ns string, sel labels.Selector) ([]machinev1beta1.MachineSet, error) {
	l := &machinev1beta1.MachineSetList{}
	if err := k.Client.List(ctx, l, client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("listing MachineSets in %s: %w", ns, err)
	}
	return l.Items, nil
}

// MachineSet implements Cluster.
func (k Kube) MachineSet(ctx context.Context, ns, name string) (*machinev1beta1.MachineSet, error) {
	o := &machinev1beta1.MachineSet{}
	return o, get(ctx, k.Client, ns, name, o)
}

// Secret implements Cluster.
func (k Kube) Secret(ctx context.Context, ns, name string) (*corev1.Secret, error) {
	o := &corev1.Secret{}
	return o, get(ctx, k.Client, ns, name, o)
}

// PatchMachineSet implements Cluster.
func (k Kube) PatchMachineSet(ctx context.Context, ms *machinev1beta1.MachineSet, patch []byte) error {
	return k.Client.Patch(ctx, ms, client.RawPatch(types.MergePatchType, patch))
}

// UpdateSecret implements Cluster.
func (k Kube) UpdateSecret(ctx context.Context, s *corev1.Secret) error {
	return k.Client.Update(ctx, s)
}

// PatchMachineConfigurationStatus implements Cluster.
func (k Kube) PatchMachineConfigurationStatus(ctx context.Context, mc *operatorv1.MachineConfiguration, patch []byte) error {
	return k.Client.Status().Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch))
}

// BootImageHistory implements Cluster.
func (k Kube) BootImageHistory(ctx context.Context, ns, name string) (*mcfgv1alpha1.BootImageHistory, error) {
	o := &mcfgv1alpha1.BootImageHistory{}
	return o, get(ctx, k.Client, ns, name, o)
}

// SaveBootImageHistory implements Cluster.
func (k Kube) SaveBootImageHistory(ctx context.Context, h *mcfgv1alpha1.BootImageHistory) error {
	if h.ResourceVersion == "" {
		return k.Client.Create(ctx, h)
	}
	return k.Client.Update(ctx, h)
}

func get(ctx context.Context, c client.Client, ns, name string, o client.Object) error {
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		// The kind as the API names it, not the Go type's package-qualified
		// name, so a message reads the same for a cluster and a folder.
		kind := fmt.Sprintf("%T", o)[1:]
		if gvk, err := apiutil.GVKForObject(o, c.Scheme()); err == nil {
			kind = gvk.Kind
		}
		if apierrors.IsNotFound(err) {
			return &NotFoundError{Kind: kind, Namespace: ns, Name: name}
		}
		return fmt.Errorf("reading %s %s/%s: %w", kind, ns, name, err)
	}
	return nil
}

// NotFoundError says an input object does not exist.
type NotFoundError struct{ Kind, Namespace, Name string }

func (e *NotFoundError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("%s %s: not found", e.Kind, e.Name)
	}
	return fmt.Sprintf("%s %s/%s: not found", e.Kind, e.Namespace, e.Name)
}
