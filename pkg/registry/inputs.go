package registry

import (
	"errors"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterObjectName is the name of the one Image and the one Proxy config
// OpenShift reads.
const ClusterObjectName = "cluster"

// TrustedCANamespace holds the ConfigMap additionalTrustedCA names.
const TrustedCANamespace = "openshift-config"

// ClusterInputsFrom gathers ClusterInputs from decoded objects: every
// ImageDigestMirrorSet, ImageTagMirrorSet and ImageContentSourcePolicy
// (alone or in their typed lists), the Image and the Proxy, and the
// openshift-config ConfigMap the Image's additionalTrustedCA names when it
// is among objs (MCO, too, goes on without it). Other objects are
// ignored. An Image or Proxy not named "cluster", which OpenShift would
// never read, is an error, and so is a second one.
func ClusterInputsFrom(objs ...runtime.Object) (ClusterInputs, error) {
	var in ClusterInputs
	var cms []*corev1.ConfigMap
	var errs []error
	for _, o := range objs {
		switch t := o.(type) {
		case *configv1.ImageDigestMirrorSet:
			in.IDMS = append(in.IDMS, *t)
		case *configv1.ImageDigestMirrorSetList:
			in.IDMS = append(in.IDMS, t.Items...)
		case *configv1.ImageTagMirrorSet:
			in.ITMS = append(in.ITMS, *t)
		case *configv1.ImageTagMirrorSetList:
			in.ITMS = append(in.ITMS, t.Items...)
		case *operatorv1alpha1.ImageContentSourcePolicy:
			in.ICSP = append(in.ICSP, *t)
		case *operatorv1alpha1.ImageContentSourcePolicyList:
			in.ICSP = append(in.ICSP, t.Items...)
		case *configv1.Image:
			errs = append(errs, single("Image", &in.Image, t, t.Name))
		case *configv1.Proxy:
			errs = append(errs, single("Proxy", &in.Proxy, t, t.Name))
		case *corev1.ConfigMap:
			cms = append(cms, t)
		}
	}
	if in.Image != nil && in.Image.Spec.AdditionalTrustedCA.Name != "" {
		for _, cm := range cms {
			if cm.Namespace == TrustedCANamespace && cm.Name == in.Image.Spec.AdditionalTrustedCA.Name {
				in.TrustedCA = cm
			}
		}
	}
	return in, errors.Join(errs...)
}

// single keeps the one cluster-wide config object of a kind.
func single[T any](kind string, slot **T, obj *T, name string) error {
	switch {
	case name != ClusterObjectName:
		return fmt.Errorf("%s %s: metadata.name: must be %q, the only %s OpenShift reads", kind, name, ClusterObjectName, kind)
	case *slot != nil:
		return fmt.Errorf("%s %s: given twice", kind, name)
	}
	*slot = obj
	return nil
}
