package manifests

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// readGroups are the API groups kiln reads objects of. In these a kind or
// version the scheme does not know is a typo that would silently drop the
// object, so it is an error; objects of other groups (a GitOps folder holds
// many) pass through unstructured.
var readGroups = map[string]bool{
	"":                                  true,
	"machineconfiguration.openshift.io": true,
	"kmm.sigs.x-k8s.io":                 true,
	"machine.openshift.io":              true,
	"config.openshift.io":               true,
	"operator.openshift.io":             true,
}

// checkKnown refuses a kind the scheme does not know in a group kiln reads,
// with the words kubectl uses for a kind no API serves: a misspelt kind in
// a version the scheme knows, or a known kind in a version it does not. A
// kind of such a group the scheme knows in no version (a newer OpenShift
// API, say) passes through: kiln does not read it.
func checkKnown(s *runtime.Scheme, gvk schema.GroupVersionKind) error {
	if !readGroups[gvk.Group] {
		return nil
	}
	noMatch := &meta.NoKindMatchError{GroupKind: gvk.GroupKind(), SearchedVersions: []string{gvk.Version}}
	if s.IsVersionRegistered(gvk.GroupVersion()) {
		return noMatch
	}
	for _, gv := range s.PrioritizedVersionsForGroup(gvk.Group) {
		if s.Recognizes(gv.WithKind(gvk.Kind)) {
			return noMatch
		}
	}
	return nil
}

// nameRule is the rule the apiserver applies to the name of an object of
// kind gk: DNS subdomain for every custom resource (apiextensions-apiserver
// validates every CR's name so) and most built-in kinds; the exceptions
// kiln may meet in a folder are from k8s.io/kubernetes pkg/apis/core and
// pkg/apis/rbac validation: namespaces are DNS labels, services RFC 1035
// labels, RBAC objects only path segments (names such as
// "system:controller:x" are valid there).
func nameRule(gk schema.GroupKind) apivalidation.ValidateNameFunc {
	switch {
	case gk == schema.GroupKind{Kind: "Namespace"}:
		return apivalidation.ValidateNamespaceName
	case gk == schema.GroupKind{Kind: "Service"}:
		return apivalidation.NameIsDNS1035Label
	case gk.Group == "rbac.authorization.k8s.io":
		return path.ValidatePathSegmentName
	}
	return apivalidation.NameIsDNSSubdomain
}

// validateMeta applies the apiserver's ObjectMeta validation: a name by
// the kind's rule, a valid namespace when one is given (kubectl fills in
// its own otherwise), labels, annotations (size included), owner
// references and finalizers. generateName is refused: `kubectl apply`
// cannot apply it, and kiln keys every object by its name.
func validateMeta(obj runtime.Object, gk schema.GroupKind) field.ErrorList {
	m, err := meta.Accessor(obj)
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	fld := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaAccessor(m, m.GetNamespace() != "", nameRule(gk), fld)
	if m.GetName() == "" && m.GetGenerateName() != "" {
		errs = append(errs, field.Forbidden(fld.Child("generateName"), "a manifest folder is applied: give metadata.name"))
	}
	return append(errs, validateData(obj)...)
}

// validateData holds ConfigMap and Secret keys and sizes to the apiserver's
// rules (k8s.io/kubernetes pkg/apis/core/validation ValidateConfigMap and
// ValidateSecret).
func validateData(obj runtime.Object) field.ErrorList {
	var errs field.ErrorList
	keys := func(fld *field.Path, ks []string) {
		for _, k := range ks {
			for _, msg := range validation.IsConfigMapKey(k) {
				errs = append(errs, field.Invalid(fld.Key(k), k, msg))
			}
		}
	}
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		size := 0
		for k, v := range o.Data {
			size += len(k) + len(v)
			if _, dup := o.BinaryData[k]; dup {
				errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, "duplicate of key present in binaryData"))
			}
		}
		for k, v := range o.BinaryData {
			size += len(k) + len(v)
		}
		keys(field.NewPath("data"), mapKeys(o.Data))
		keys(field.NewPath("binaryData"), mapKeys(o.BinaryData))
		if size > corev1.MaxSecretSize {
			errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
		}
	case *corev1.Secret:
		size := 0
		for _, v := range o.Data {
			size += len(v)
		}
		keys(field.NewPath("data"), mapKeys(o.Data))
		if size > corev1.MaxSecretSize {
			errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
		}
	}
	return errs
}

// mapKeys lists m's keys sorted, so that errors come in a stable order.
func mapKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// objectKey identifies an object as the apiserver does, for duplicates.
type objectKey struct {
	gk              schema.GroupKind
	namespace, name string
}

func (k objectKey) String() string {
	if k.namespace == "" {
		return fmt.Sprintf("%s %s", k.gk.Kind, k.name)
	}
	return fmt.Sprintf("%s %s/%s", k.gk.Kind, k.namespace, k.name)
}
