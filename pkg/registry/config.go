package registry

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	"go.podman.io/image/v5/docker/reference"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
	corev1 "k8s.io/api/core/v1"
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
	// Proxy is proxy.config.openshift.io/cluster; nil means none.
	// FromCluster does not read it (a proxy reaches the Task pods as
	// environment, not through registries.conf); it is here so one read
	// of the cluster, or of a manifests folder, serves both.
	Proxy *configv1.Proxy
}

// The registries folder is how a Config reaches a step: registries.conf
// (containers-registries.conf(5) v2) and certs.d/<host[:port]>/ca.crt, the
// layout containers/image and buildah read.
const (
	RegistriesConfFile = "registries.conf"
	CertsDir           = "certs.d"
)

// PullSources lists where ref may be pulled from, mirrors first, in order.
// The source registry is left out when it is blocked (NeverContactSource).
// Without a matching mirror it is just ref.
//
// This is what containers/image does for CRI-O (docker.newImageSource):
// the registries.conf entry with the longest prefix matching ref's
// repository gives its PullSourcesFromReference (digest-only mirrors for
// digest references, tag-only ones for tags, the entry's own location
// last), and each source whose own entry is blocked is skipped, since
// containers/image refuses to create a client for a blocked registry. A
// mirror flagged insecure gives a reference allowed to use plain HTTP.
// When every source is blocked the error says so.
func (c *Config) PullSources(ref name.Reference) ([]Source, error) {
	if c == nil || len(c.Registries.Registries) == 0 {
		return []Source{{Ref: ref}}, nil
	}
	regs := c.registries()
	named, err := reference.ParseNamed(imageString(ref))
	if err != nil {
		return nil, fmt.Errorf("parsing %s as containers/image does: %w", ref, err)
	}
	reg := find(regs, named.Name())
	if reg == nil {
		return []Source{{Ref: ref}}, nil
	}
	pulls, err := reg.PullSourcesFromReference(named)
	if err != nil {
		return nil, fmt.Errorf("rewriting %s for the mirrors of %s: %w", ref, reg.Prefix, err)
	}
	var out []Source
	var blocked []string
	for i, p := range pulls {
		if r := find(regs, p.Reference.Name()); r != nil && r.Blocked {
			blocked = append(blocked, p.Reference.String())
			continue
		}
		s, err := source(ref, p, i < len(pulls)-1)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pulling %s: every source is blocked (%s); a mirror set with mirrorSourcePolicy NeverContactSource or the image config's blockedRegistries blocks it, and no mirror applies to a reference by %s",
			ref, strings.Join(blocked, ", "), refKind(ref))
	}
	return out, nil
}

// source turns one containers/image pull source into a go-containerregistry
// reference. The reference's own location keeps the caller's reference
// (and its options) unless a registries.conf entry rewrote or flagged it.
func source(ref name.Reference, p sysregistriesv2.PullSource, mirror bool) (Source, error) {
	s := p.Reference.String()
	if !mirror && !p.Endpoint.Insecure && s == imageString(ref) {
		return Source{Ref: ref}, nil
	}
	var opts []name.Option
	if p.Endpoint.Insecure {
		opts = append(opts, name.Insecure)
	}
	r, err := name.ParseReference(s, opts...)
	if err != nil {
		return Source{}, fmt.Errorf("parsing pull source %s of %s: %w", s, ref, err)
	}
	return Source{Ref: r, Mirror: mirror}, nil
}

func refKind(ref name.Reference) string {
	if _, ok := ref.(name.Digest); ok {
		return "digest"
	}
	return "tag"
}

// dockerHub is Docker Hub's name in registries.conf; go-containerregistry
// calls it index.docker.io.
const dockerHub = "docker.io"

// imageString writes ref as containers/image spells it.
func imageString(ref name.Reference) string {
	repo := hostKey(ref.Context().RegistryStr()) + "/" + ref.Context().RepositoryStr()
	if d, ok := ref.(name.Digest); ok {
		return repo + "@" + d.DigestStr()
	}
	return repo + ":" + ref.Identifier()
}

// hostKey spells a go-containerregistry host the way registries.conf and
// certs.d do.
func hostKey(host string) string {
	if host == name.DefaultRegistry {
		return dockerHub
	}
	return host
}

// Insecure reports whether host[:port] is reached over plain HTTP or
// unverified TLS: its registries.conf entry (the most precise one for the
// host, wildcards included) says insecure = true, or a mirror on that host
// does. Insecure flags scoped to one namespace of a host (quay.io/team)
// apply to that namespace's pull sources only, never to the whole host.
func (c *Config) Insecure(host string) bool {
	if c == nil {
		return false
	}
	host = hostKey(host)
	regs := c.registries()
	if r := find(regs, host); r != nil && r.Insecure {
		return true
	}
	for _, r := range regs {
		for _, m := range r.Mirrors {
			if m.Insecure && hostOf(m.Location) == host {
				return true
			}
		}
	}
	return false
}

// CA returns the PEM bundle trusted for host[:port] only, or nil.
func (c *Config) CA(host string) []byte {
	if c == nil {
		return nil
	}
	return c.CAs[hostKey(host)]
}

// registries returns the entries as containers/image holds them after
// loading a file (its postProcessRegistries, unexported): locations and
// prefixes without a trailing "/", an empty prefix set to the location,
// the first of several entries with one prefix kept, sorted by prefix.
func (c *Config) registries() []sysregistriesv2.Registry {
	seen := map[string]bool{}
	var out []sysregistriesv2.Registry
	for _, r := range c.Registries.Registries {
		r.Location = strings.TrimRight(r.Location, "/")
		r.Prefix = strings.TrimRight(r.Prefix, "/")
		if r.Prefix == "" {
			r.Prefix = r.Location
		}
		if seen[r.Prefix] {
			continue
		}
		seen[r.Prefix] = true
		r.Mirrors = slices.Clone(r.Mirrors)
		for i := range r.Mirrors {
			r.Mirrors[i].Location = strings.TrimRight(r.Mirrors[i].Location, "/")
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out
}

// find is sysregistriesv2.FindRegistry on regs (which reads files only):
// the entry with the longest prefix matching ref, the first on a tie.
func find(regs []sysregistriesv2.Registry, ref string) *sysregistriesv2.Registry {
	var best *sysregistriesv2.Registry
	for i := range regs {
		if matchLen(ref, regs[i].Prefix) == -1 {
			continue
		}
		if best == nil || len(regs[i].Prefix) > len(best.Prefix) {
			best = &regs[i]
		}
	}
	return best
}
