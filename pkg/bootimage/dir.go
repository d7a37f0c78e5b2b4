package bootimage

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/safepath"
)

// Dir is a Cluster on a folder of manifests (local/GitOps mode). Reads come
// from the folder; every write goes to Output as the full changed object,
// one file each, so the output folder is the GitOps change. The source
// folder is never modified.
type Dir struct {
	Output string
	objs   map[string]runtime.Object // kind/namespace/name
	// capi holds Cluster API and provider objects (capiKey).
	capi map[string]*unstructured.Unstructured
}

var _ Cluster = (*Dir)(nil)

// LoadDir reads the manifests under root the way every stage does
// (pkg/manifests). Kinds the stage does not read are ignored; Cluster API
// and provider objects are kept unstructured.
func LoadDir(root, output string) (*Dir, error) {
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	d := &Dir{Output: output, objs: map[string]runtime.Object{}, capi: map[string]*unstructured.Unstructured{}}
	err = manifests.Walk(root, func(obj runtime.Object) error {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if isCAPIGroup(u.GetAPIVersion()) {
				d.capi[capiKey(u.GroupVersionKind().Group, u.GetKind(), u.GetNamespace(), u.GetName())] = u
			}
			return nil
		}
		m, ok := obj.(metav1.Object)
		gvks, _, err := scheme.ObjectKinds(obj)
		if !ok || err != nil || len(gvks) == 0 {
			return nil
		}
		d.objs[gvks[0].Kind+"/"+m.GetNamespace()+"/"+m.GetName()] = obj
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func lookup[T runtime.Object](d *Dir, kind, ns, name string) (T, error) {
	var zero T
	o, ok := d.objs[kind+"/"+ns+"/"+name]
	if !ok {
		return zero, &NotFoundError{Kind: kind, Namespace: ns, Name: name}
	}
	t, ok := o.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s: unexpected type %T", kind, ns, name, o)
	}
	return t.DeepCopyObject().(T), nil
}

// MachineConfiguration implements Cluster.
func (d *Dir) MachineConfiguration(context.Context) (*operatorv1.MachineConfiguration, error) {
	return lookup[*operatorv1.MachineConfiguration](d, "MachineConfiguration", "", MachineConfigurationName)
}

// Infrastructure implements Cluster.
func (d *Dir) Infrastructure(context.Context) (*configv1.Infrastructure, error) {
	return lookup[*configv1.Infrastructure](d, "Infrastructure", "", "cluster")
}

// ClusterVersion implements Cluster.
func (d *Dir) ClusterVersion(context.Context) (*configv1.ClusterVersion, error) {
	return lookup[*configv1.ClusterVersion](d, "ClusterVersion", "", "version")
}

// ConfigMap implements Cluster.
func (d *Dir) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	return lookup[*corev1.ConfigMap](d, "ConfigMap", ns, name)
}

// MachineSets implements Cluster.
func (d *Dir) MachineSets(_ context.Context, ns string, sel labels.Selector) ([]machinev1beta1.MachineSet, error) {
	var out []machinev1beta1.MachineSet
	for _, o := range d.objs {
		if ms, ok := o.(*machinev1beta1.MachineSet); ok && ms.Namespace == ns && sel.Matches(labels.Set(ms.Labels)) {
			out = append(out, *ms.DeepCopy())
		}
	}
	return out, nil
}

// MachineSet implements Cluster.
func (d *Dir) MachineSet(_ context.Context, ns, name string) (*machinev1beta1.MachineSet, error) {
	return lookup[*machinev1beta1.MachineSet](d, "MachineSet", ns, name)
}

// Secret implements Cluster.
func (d *Dir) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	return lookup[*corev1.Secret](d, "Secret", ns, name)
}

// PatchMachineSet implements Cluster: the merge patch is applied to the
// manifest and the result written to Output.
func (d *Dir) PatchMachineSet(_ context.Context, ms *machinev1beta1.MachineSet, patch []byte) error {
	cur, err := lookup[*machinev1beta1.MachineSet](d, "MachineSet", ms.Namespace, ms.Name)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(cur)
	if err != nil {
		return err
	}
	merged, err := mergePatch(doc, patch)
	if err != nil {
		return fmt.Errorf("applying patch to MachineSet %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	next := &machinev1beta1.MachineSet{}
	if err := json.Unmarshal(merged, next); err != nil {
		return err
	}
	next.ResourceVersion = cur.ResourceVersion // local files carry no server state
	next.APIVersion, next.Kind = "machine.openshift.io/v1beta1", "MachineSet"
	d.objs["MachineSet/"+next.Namespace+"/"+next.Name] = next
	*ms = *next.DeepCopy()
	return d.write("machinesets", next.Namespace+"_"+next.Name, next)
}

// UpdateSecret implements Cluster.
func (d *Dir) UpdateSecret(_ context.Context, s *corev1.Secret) error {
	s = s.DeepCopy()
	s.APIVersion, s.Kind = "v1", "Secret"
	d.objs["Secret/"+s.Namespace+"/"+s.Name] = s
	return d.write("secrets", s.Namespace+"_"+s.Name, s)
}

// PatchMachineConfigurationStatus implements Cluster.
func (d *Dir) PatchMachineConfigurationStatus(_ context.Context, mc *operatorv1.MachineConfiguration, patch []byte) error {
	doc, err := json.Marshal(mc)
	if err != nil {
		return err
	}
	merged, err := mergePatch(doc, patch)
	if err != nil {
		return err
	}
	next := &operatorv1.MachineConfiguration{}
	if err := json.Unmarshal(merged, next); err != nil {
		return err
	}
	next.APIVersion, next.Kind = "operator.openshift.io/v1", "MachineConfiguration"
	d.objs["MachineConfiguration//"+next.Name] = next
	return d.write("", "machineconfiguration_"+next.Name, next)
}

// write writes o to Output/sub/name.yaml. name comes from the object's
// namespace and name, which the loader validated; the path is still
// checked to be one element and written through safepath, so no name can
// place a file outside Output.
func (d *Dir) write(sub, name string, o any) error {
	if err := safepath.Element(name + ".yaml"); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	b, err := yaml.Marshal(o)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if sub == "secrets" {
		mode = 0o600
	}
	return safepath.WriteFile(d.Output, filepath.Join(sub, name+".yaml"), b, mode)
}

// BootImageHistory implements Cluster.
func (d *Dir) BootImageHistory(_ context.Context, ns, name string) (*mcfgv1alpha1.BootImageHistory, error) {
	return lookup[*mcfgv1alpha1.BootImageHistory](d, "BootImageHistory", ns, name)
}

// SaveBootImageHistory implements Cluster.
func (d *Dir) SaveBootImageHistory(_ context.Context, h *mcfgv1alpha1.BootImageHistory) error {
	h = h.DeepCopy()
	h.APIVersion, h.Kind = mcfgv1alpha1.GroupVersion.String(), "BootImageHistory"
	d.objs["BootImageHistory/"+h.Namespace+"/"+h.Name] = h
	return d.write("bootimagehistories", h.Namespace+"_"+h.Name, h)
}

// mergePatch applies an RFC 7386 JSON merge patch.
func mergePatch(doc, patch []byte) ([]byte, error) {
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	return json.Marshal(mergeValue(d, p))
}

func mergeValue(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = mergeValue(dm[k], v)
	}
	return dm
}
