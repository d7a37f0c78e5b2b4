package localrun

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	configv1 "github.com/openshift/api/config/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// registriesDir is the registries folder under the output folder.
const registriesDir = "registries"

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
// API server, with loadClusterInputs (manifests.Walk's strict
// decoding, the one validator): every mirror set, the Image "cluster" with
// the openshift-config ConfigMap its spec.additionalTrustedCA names, and
// the Proxy "cluster".
func readLocalRegistries(dir string) (localRegistries, error) {
	in, err := loadClusterInputs(dir)
	if err != nil {
		return localRegistries{}, err
	}
	// By name, as cluster mode lists them: the same objects make the same
	// registries.conf whichever mode reads them.
	sort.Slice(in.IDMS, func(i, j int) bool { return in.IDMS[i].Name < in.IDMS[j].Name })
	sort.Slice(in.ITMS, func(i, j int) bool { return in.ITMS[i].Name < in.ITMS[j].Name })
	sort.Slice(in.ICSP, func(i, j int) bool { return in.ICSP[i].Name < in.ICSP[j].Name })
	// A named CA that is not there is an error, as in cluster mode: a build
	// that ignored it would fail later, on the first TLS handshake with the
	// registry the CA was for, far from the cause.
	if img := in.Image; img != nil && img.Spec.AdditionalTrustedCA.Name != "" && in.TrustedCA == nil {
		return localRegistries{}, fmt.Errorf("reading manifests from %s: Image %s: spec.additionalTrustedCA.name: ConfigMap %s/%s is not in the folder",
			dir, img.Name, registry.TrustedCANamespace, img.Spec.AdditionalTrustedCA.Name)
	}
	return localRegistries{Inputs: in, Proxy: in.Proxy}, nil
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
