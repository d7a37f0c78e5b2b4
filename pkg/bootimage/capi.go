package bootimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Cluster API (cluster.x-k8s.io) MachineSets keep their boot image in an
// InfrastructureMachineTemplate (GCPMachineTemplate, AWSMachineTemplate…)
// that spec.template.spec.infrastructureRef names. Templates are immutable
// by contract, so kiln clones the template under a content-hash name with
// the new boot image, points the MachineSet at the clone and deletes the old
// template once no MachineSet or MachineDeployment refers to it (the boot image enhancement,
// "Cluster API backed machinesets"). MCO has no Cluster API path; this is
// beyond MCO. CAPI and provider objects are handled as unstructured objects
// so that kiln does not import the cluster-api modules (their CRDs come from
// the module cache in test/env).
const (
	// CAPIGroup is the Cluster API core group.
	CAPIGroup = "cluster.x-k8s.io"
	// InfraGroup is the group of the providers' infrastructure templates.
	InfraGroup = "infrastructure.cluster.x-k8s.io"
	// CAPINamespace is where OpenShift keeps its Cluster API objects.
	CAPINamespace = "openshift-cluster-api"

	// TemplateClonedFromAnnotation on a clone names the template it replaced,
	// so that a later pass can finish an interrupted garbage collection.
	TemplateClonedFromAnnotation = "kiln.dev/boot-image-cloned-from"
	// TemplateBaseNameAnnotation keeps the name before any kiln hash suffix,
	// so that clones of clones do not grow their names.
	TemplateBaseNameAnnotation = "kiln.dev/boot-image-template-base"

	infraRefField = "spec.template.spec.infrastructureRef"
	// hashLen hex digits of sha256 name a clone; templateNameMax keeps names
	// valid as label values too (CAPI copies names into labels).
	hashLen         = 10
	templateNameMax = 63
)

// CAPIMode selects the Cluster API MachineSets to manage.
//
// Difference from the enhancement, which opts CAPI MachineSets in through a
// MachineConfiguration machineManagers entry with apiGroup cluster.x-k8s.io,
// but the pinned openshift/api only accepts machine.openshift.io there (the
// apiserver rejects the entry). kiln therefore takes the CAPI opt-in from
// flags of the step: --capi-mode None (default) / All / Partial with
// --capi-selector, the same three modes as the enhancement's selector.
type CAPIMode string

// CAPI opt-in modes.
const (
	CAPINone    CAPIMode = "None"
	CAPIAll     CAPIMode = "All"
	CAPIPartial CAPIMode = "Partial"
)

// CAPIOptIn is the Cluster API enrollment of a pass.
type CAPIOptIn struct {
	Mode CAPIMode
	// Selector picks MachineSets by label in Partial mode.
	Selector labels.Selector
	// Namespace holds the CAPI MachineSets (openshift-cluster-api).
	Namespace string
}

// selector returns the enrolled MachineSets' selector, nil for none.
func (o CAPIOptIn) selector() (labels.Selector, error) {
	switch o.Mode {
	case "", CAPINone:
		return nil, nil
	case CAPIAll:
		return labels.Everything(), nil
	case CAPIPartial:
		if o.Selector == nil {
			return nil, fmt.Errorf("Cluster API opt-in: mode Partial needs a label selector")
		}
		return o.Selector, nil
	}
	return nil, fmt.Errorf("Cluster API opt-in: unknown mode %q (want None, All or Partial)", o.Mode)
}

// TemplateRef names an infrastructure template. Version is empty when the
// reference carries only the group (CAPI v1beta2 ContractVersionedObjectReference).
type TemplateRef struct {
	Group, Version, Kind, Namespace, Name string
}

func (r TemplateRef) String() string { return fmt.Sprintf("%s %s/%s", r.Kind, r.Namespace, r.Name) }

// key identifies a template whatever version it is read at.
func (r TemplateRef) key() string { return r.Group + "/" + r.Kind + "/" + r.Namespace + "/" + r.Name }

// RefOf returns the reference of an object read from the cluster.
func RefOf(u *unstructured.Unstructured) TemplateRef {
	gvk := u.GroupVersionKind()
	return TemplateRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// infraRef reads spec.template.spec.infrastructureRef of a CAPI MachineSet
// or MachineDeployment, in its v1beta1 (apiVersion) or v1beta2 (apiGroup) form.
func infraRef(u *unstructured.Unstructured) (TemplateRef, error) {
	where := fmt.Sprintf("%s %s/%s %s", u.GetKind(), u.GetNamespace(), u.GetName(), infraRefField)
	m, found, err := unstructured.NestedMap(u.Object, "spec", "template", "spec", "infrastructureRef")
	if err != nil {
		return TemplateRef{}, fmt.Errorf("%s: %w", where, err)
	}
	if !found {
		return TemplateRef{}, fmt.Errorf("%s: missing", where)
	}
	str := func(k string) string { s, _ := m[k].(string); return s }
	ref := TemplateRef{Kind: str("kind"), Name: str("name"), Namespace: str("namespace"), Group: str("apiGroup")}
	if av := str("apiVersion"); av != "" {
		gv, err := schema.ParseGroupVersion(av)
		if err != nil {
			return TemplateRef{}, fmt.Errorf("%s.apiVersion: %w", where, err)
		}
		ref.Group, ref.Version = gv.Group, gv.Version
	}
	if ref.Namespace == "" {
		ref.Namespace = u.GetNamespace()
	}
	switch {
	case ref.Kind == "":
		return TemplateRef{}, fmt.Errorf("%s.kind: empty", where)
	case ref.Name == "":
		return TemplateRef{}, fmt.Errorf("%s.name: empty", where)
	case ref.Group == "":
		return TemplateRef{}, fmt.Errorf("%s: neither apiVersion nor apiGroup", where)
	}
	return ref, nil
}

// TemplateInput is what a TemplateUpdater may look at.
type TemplateInput struct {
	Template *unstructured.Unstructured
	Arch     string
	Stream   *Stream
	Infra    *configv1.Infrastructure
}

// TemplateUpdater decides the boot image of a provider's machine template;
// Plan.Edits are paths under the template's spec.template.spec.
type TemplateUpdater interface {
	PlanTemplate(in TemplateInput) (Plan, error)
}

// TemplateUpdaterFor returns the updater of an infrastructure template kind.
func TemplateUpdaterFor(group, kind string) (TemplateUpdater, bool) {
	if group != InfraGroup {
		return nil, false
	}
	switch kind {
	case "GCPMachineTemplate":
		return GCP{}, true
	case "AWSMachineTemplate":
		return AWS{}, true
	}
	return nil, false
}

// SupportedTemplateKinds names the kinds TemplateUpdaterFor knows, for errors.
const SupportedTemplateKinds = "GCPMachineTemplate, AWSMachineTemplate"

// templateSpec returns the template's spec.template.spec.
func templateSpec(t *unstructured.Unstructured) (map[string]any, error) {
	m, found, err := unstructured.NestedMap(t.Object, "spec", "template", "spec")
	if err != nil || !found {
		return nil, fmt.Errorf("%s %s/%s spec.template.spec: missing or not an object", t.GetKind(), t.GetNamespace(), t.GetName())
	}
	return m, nil
}

// templateString reads a string field of spec.template.spec ("" if absent).
func templateString(t *unstructured.Unstructured, spec map[string]any, path ...string) (string, error) {
	s, _, err := unstructured.NestedString(spec, path...)
	if err != nil {
		return "", fmt.Errorf("%s %s/%s spec.template.spec.%s: %w", t.GetKind(), t.GetNamespace(), t.GetName(), strings.Join(path, "."), err)
	}
	return s, nil
}

// cloneTemplate returns a copy of old with the edits applied to its
// spec.template.spec, named <base>-<hash of kind and spec>: the same content
// always gets the same name, so a re-run (or a second MachineSet sharing the
// template) finds the clone instead of making another. Labels, annotations
// and ownerReferences (e.g. to the CAPI Cluster) are kept; server fields and
// status are not.
func cloneTemplate(old *unstructured.Unstructured, edits []Edit) (*unstructured.Unstructured, error) {
	spec, ok := old.Object["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s/%s spec: missing or not an object", old.GetKind(), old.GetNamespace(), old.GetName())
	}
	// runtime.DeepCopyJSON keeps int64 numbers as they are (a JSON round
	// trip would make them float64 and the clone would differ from a
	// template read back from the API server).
	next := runtime.DeepCopyJSON(spec)
	for _, e := range edits {
		path := append([]any{"template", "spec"}, e.Path...)
		if err := setPath(next, path, e.Value); err != nil {
			return nil, fmt.Errorf("editing %s %s/%s spec.%s: %w", old.GetKind(), old.GetNamespace(), old.GetName(), Edit{Path: path}, err)
		}
	}
	base := old.GetAnnotations()[TemplateBaseNameAnnotation]
	if base == "" {
		base = old.GetName()
	}
	base = strings.TrimRight(truncateName(base, templateNameMax-hashLen-1), "-.")
	sum, err := contentHash(old.GetKind(), next)
	if err != nil {
		return nil, err
	}
	c := &unstructured.Unstructured{Object: map[string]any{"spec": next}}
	c.SetAPIVersion(old.GetAPIVersion())
	c.SetKind(old.GetKind())
	c.SetNamespace(old.GetNamespace())
	c.SetName(base + "-" + sum)
	c.SetLabels(old.GetLabels())
	ann := map[string]string{}
	for k, v := range old.GetAnnotations() {
		if k != "kubectl.kubernetes.io/last-applied-configuration" {
			ann[k] = v
		}
	}
	ann[TemplateClonedFromAnnotation] = old.GetName()
	ann[TemplateBaseNameAnnotation] = base
	c.SetAnnotations(ann)
	c.SetOwnerReferences(old.GetOwnerReferences())
	return c, nil
}

func contentHash(kind string, spec map[string]any) (string, error) {
	b, err := json.Marshal(map[string]any{"kind": kind, "spec": spec}) // map keys marshal sorted
	if err != nil {
		return "", fmt.Errorf("hashing template: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:hashLen], nil
}

func truncateName(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
