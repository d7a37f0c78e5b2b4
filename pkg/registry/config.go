package registry

import (
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/google/go-containerregistry/pkg/name"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// Config is what a cluster says about its registries besides credentials:
// mirrors (IDMS, ITMS, ICSP), per-registry insecure and blocked flags, and
// per-registry CAs. Its mirror and flag model is containers-registries.conf(5),
// the file CRI-O reads on every node, so kiln pulls the way the nodes do.
// The zero value (and nil) means: no mirrors, every registry over verified
// TLS with the system roots.
type Config struct {
	// Registries is the registries.conf model (v2 TOML).
	Registries sysregistriesv2.V2RegistriesConf
	// CAs maps host[:port] to the PEM bundle trusted for that registry
	// only, in addition to the system roots.
	CAs map[string][]byte
}

// Source is one place a reference may be pulled from, in the order CRI-O
// tries them.
type Source struct {
	// Ref is the reference rewritten to this source.
	Ref name.Reference
	// Mirror is false for the reference's own registry.
	Mirror bool
}

// PullSources lists where ref may be pulled from, mirrors first, in order.
// The source registry is left out when it is blocked (NeverContactSource).
// Without a matching mirror it is just ref.
func (c *Config) PullSources(ref name.Reference) ([]Source, error) {
	return []Source{{Ref: ref}}, nil
}

// ClusterInputs are the cluster objects a Config is made from. In cluster
// mode the trigger reads them from the API server; in directory mode they
// come from the manifests folder, decoded by pkg/manifests (one validator).
type ClusterInputs struct {
	IDMS []configv1.ImageDigestMirrorSet
	ITMS []configv1.ImageTagMirrorSet
	ICSP []operatorv1alpha1.ImageContentSourcePolicy
	// Image is image.config.openshift.io/cluster (insecureRegistries,
	// blockedRegistries, additionalTrustedCA); nil means none.
	Image *configv1.Image
	// TrustedCA is the openshift-config ConfigMap named by
	// Image.Spec.AdditionalTrustedCA: keys are host, or host..port.
	TrustedCA *corev1.ConfigMap
	// Insecure adds host[:port] entries reached over plain HTTP
	// (--insecure-registry, KILN_INSECURE_REGISTRY).
	Insecure []string
}

// FromCluster builds the Config the cluster's nodes would use.
func FromCluster(in ClusterInputs) (*Config, error) {
	return &Config{}, nil
}

// The registries folder is how a Config reaches a step: registries.conf
// (containers-registries.conf(5) v2) and certs.d/<host[:port]>/ca.crt, the
// layout containers/image and buildah read.
const (
	RegistriesConfFile = "registries.conf"
	CertsDir           = "certs.d"
)

// WriteDir writes c as a registries folder.
func (c *Config) WriteDir(dir string) error { return nil }

// LoadDir reads a registries folder written by WriteDir (or by hand). An
// empty dir means no Config.
func LoadDir(dir string) (*Config, error) { return nil, nil }

// Insecure reports whether host[:port] is reached over plain HTTP or
// unverified TLS.
func (c *Config) Insecure(host string) bool { return false }

// CA returns the PEM bundle trusted for host[:port] only, or nil.
func (c *Config) CA(host string) []byte { return nil }
