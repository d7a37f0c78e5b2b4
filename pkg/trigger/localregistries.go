package trigger

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// The cluster objects that say how its nodes reach registries live in
// openshift-config and under the name "cluster", as on a real cluster.
const (
	configNamespace = "openshift-config"
	clusterName     = "cluster"
	registriesDir   = "registries"
)

// localRegistries is what a manifests folder says about registries: the
// inputs of registry.FromCluster and the cluster's proxy. None of it is a
// build input: PlanLocal never reads these objects, so adding a mirror set
// or a CA starts no run, and the next run uses them.
type localRegistries struct {
	Inputs registry.ClusterInputs
	// Proxy is proxy.config.openshift.io "cluster", or nil.
	Proxy *configv1.Proxy
}

// setupLocalRegistries reads the registry objects of the manifests folder
// src, writes the registries folder under out and returns its Config, for
// the trigger's own reads, and the environment every step gets: the
// folder (KILN_REGISTRIES_CONFIG, the default of the steps'
// --registries-config) and the cluster's proxy. insecure (kiln's own
// registry, --insecure-registry) is added to the image config's list.
func setupLocalRegistries(src, out string, insecure []string) (*registry.Config, []string, error) {
	regs, err := readLocalRegistries(src)
	if err != nil {
		return nil, nil, err
	}
	cfg, dir, err := writeLocalRegistries(out, regs.Inputs, insecure)
	if err != nil {
		return nil, nil, err
	}
	return cfg, append([]string{"KILN_REGISTRIES_CONFIG=" + dir}, localProxyEnv(regs.Proxy)...), nil
}

// readLocalRegistries collects from dir what cluster mode reads from the
// API server: every ImageDigestMirrorSet, ImageTagMirrorSet and
// ImageContentSourcePolicy, the Image "cluster" with the openshift-config
// ConfigMap its spec.additionalTrustedCA names, and the Proxy "cluster".
// Objects are decoded strictly by manifests.Walk, the one validator.
// Objects named otherwise are ignored, as MCO ignores them.
func readLocalRegistries(dir string) (localRegistries, error) {
	var r localRegistries
	seen := map[string]bool{}
	var cms []*corev1.ConfigMap
	err := manifests.Walk(dir, func(obj runtime.Object) error {
		switch t := obj.(type) {
		case *configv1.ImageDigestMirrorSet:
			r.Inputs.IDMS = append(r.Inputs.IDMS, *t)
		case *configv1.ImageTagMirrorSet:
			r.Inputs.ITMS = append(r.Inputs.ITMS, *t)
		case *operatorv1alpha1.ImageContentSourcePolicy:
			r.Inputs.ICSP = append(r.Inputs.ICSP, *t)
		case *configv1.Image:
			if t.Name == clusterName {
				r.Inputs.Image = t
			}
		case *configv1.Proxy:
			if t.Name == clusterName {
				r.Proxy = t
			}
		case *corev1.ConfigMap:
			if t.Namespace == configNamespace {
				cms = append(cms, t)
			}
			return nil
		default:
			return nil
		}
		// The API server would refuse a second object of the same name;
		// keeping one silently would hide which one applies.
		id := manifests.ObjectName(obj)
		if seen[id] {
			return fmt.Errorf("%s: defined twice", id)
		}
		seen[id] = true
		return nil
	})
	if err != nil {
		return r, err
	}
	// By name, as cluster mode lists them: the same objects make the same
	// registries.conf whichever mode reads them.
	sort.Slice(r.Inputs.IDMS, func(i, j int) bool { return r.Inputs.IDMS[i].Name < r.Inputs.IDMS[j].Name })
	sort.Slice(r.Inputs.ITMS, func(i, j int) bool { return r.Inputs.ITMS[i].Name < r.Inputs.ITMS[j].Name })
	sort.Slice(r.Inputs.ICSP, func(i, j int) bool { return r.Inputs.ICSP[i].Name < r.Inputs.ICSP[j].Name })
	if r.Inputs.TrustedCA, err = trustedCA(r.Inputs.Image, cms); err != nil {
		return r, fmt.Errorf("reading manifests from %s: %w", dir, err)
	}
	return r, nil
}

// trustedCA finds the ConfigMap img's spec.additionalTrustedCA names. A
// name with no ConfigMap is an error: on a cluster MCO stops rolling the
// image config out, and a build that ignored it would fail later, on the
// first TLS handshake with a registry the CA was for.
func trustedCA(img *configv1.Image, cms []*corev1.ConfigMap) (*corev1.ConfigMap, error) {
	if img == nil || img.Spec.AdditionalTrustedCA.Name == "" {
		return nil, nil
	}
	want := img.Spec.AdditionalTrustedCA.Name
	var found *corev1.ConfigMap
	for _, cm := range cms {
		if cm.Name != want {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s: defined twice", configNamespace, want)
		}
		found = cm
	}
	if found == nil {
		return nil, fmt.Errorf("Image %s: spec.additionalTrustedCA.name: ConfigMap %s/%s is not in the folder", clusterName, configNamespace, want)
	}
	return found, nil
}

// writeLocalRegistries builds the Config the cluster's nodes would use,
// with insecure (kiln's own registry, --insecure-registry) added, and
// writes it as the registries folder out/registries, replacing the last
// run's whole: a CA or mirror removed from the manifests must not linger.
// The output lock is held, so no step reads the folder meanwhile.
func writeLocalRegistries(out string, in registry.ClusterInputs, insecure []string) (*registry.Config, string, error) {
	in.Insecure = append(append([]string(nil), in.Insecure...), insecure...)
	cfg, err := registry.FromCluster(in)
	if err != nil {
		return nil, "", fmt.Errorf("building the registries configuration: %w", err)
	}
	dir := filepath.Join(out, registriesDir)
	tmp := dir + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, "", err
	}
	if err := cfg.WriteDir(tmp); err != nil {
		return nil, "", fmt.Errorf("writing the registries folder %s: %w", tmp, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, "", err
	}
	return cfg, dir, nil
}

// localProxyEnv is the environment that sends a step's HTTP(S) through
// the cluster's proxy. Like cluster mode (and MCO's proxy.env) it takes
// the Proxy's status, which the network operator fills in and whose
// noProxy adds the cluster's own networks and service domain. Unlike
// cluster mode, a Proxy with no status falls back to its spec: a GitOps
// folder holds what was applied, not what the operator made of it, and
// local mode's steps run outside the cluster's networks. The three values
// come from one of the two, never mixed. The lower-case names are set
// too, as in cluster mode: curl reads only those.
func localProxyEnv(p *configv1.Proxy) []string {
	if p == nil {
		return nil
	}
	vals := []string{p.Status.HTTPProxy, p.Status.HTTPSProxy, p.Status.NoProxy}
	if vals[0] == "" && vals[1] == "" && vals[2] == "" {
		vals = []string{p.Spec.HTTPProxy, p.Spec.HTTPSProxy, p.Spec.NoProxy}
	}
	var env []string
	for i, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"} {
		if vals[i] != "" {
			env = append(env, k+"="+vals[i], strings.ToLower(k)+"="+vals[i])
		}
	}
	return env
}
