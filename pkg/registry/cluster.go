package registry

import (
	"errors"
	"fmt"
	"sort"

	configv1 "github.com/openshift/api/config/v1"
	"go.podman.io/image/v5/pkg/sysregistriesv2"
)

// FromCluster builds the Config the cluster's nodes would use: the
// registries.conf MCO writes for CRI-O from the mirror sets and the image
// config, and the per-registry CAs it writes to /etc/docker/certs.d from
// additionalTrustedCA. Every problem is reported, each naming the object,
// the field and the reason.
//
// Differences from MCO, all deliberate:
//   - registries.conf has only what the cluster objects say: MCO edits a
//     template that also sets unqualified-search-registries (kiln never
//     pulls a short name), and the image config's
//     containerRuntimeSearchRegistries (a drop-in file) is not read.
//   - entries are sorted by scope; MCO appends them in the order it meets
//     them. containers/image sorts entries by prefix when it loads the
//     file, so the nodes and kiln read the same thing.
//   - allowedRegistries, and the half of blockedRegistries MCO writes to
//     policy.json, decide which images a node may run, not where it
//     connects: kiln does not apply them to its pulls (it checks that
//     allowedRegistries and blockedRegistries are not both set, as the
//     apiserver does). The registries.conf half of blockedRegistries
//     (blocked = true: never contacted, mirrors still used) is applied.
//   - MCO drops a blockedRegistries entry that would block the release
//     payload's repository when it has no unblocked mirror; kiln keeps it,
//     and pulling the payload then fails saying the registry is blocked.
//   - insecure, blocked and mirror scopes are checked as the openshift/api
//     patterns check mirror sources (MCO only checks wildcards in
//     insecure and blocked scopes, and writes e.g. "http://host", which
//     containers/image then refuses to load).
//   - a mirrored wildcard source (*.example.com) whose scope holds a more
//     precise insecure or blocked entry gives that entry the wildcard's
//     mirrors; MCO fails with an internal error there.
//   - trusted CA keys must be host or host..port and each value must hold
//     a PEM certificate; MCO writes any key as a folder name.
func FromCluster(in ClusterInputs) (*Config, error) {
	var errs []error
	digest, tag, err := mirrorRules(in)
	errs = append(errs, err)
	insecure, blocked, err := imageScopes(in)
	errs = append(errs, err)
	cas, err := trustedCAs(in.TrustedCA)
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	b := &builder{}
	digestSets, tagSets := mergeSets(digest), mergeSets(tag)
	b.addMirrors(digestSets, sysregistriesv2.MirrorByDigestOnly)
	b.addMirrors(tagSets, sysregistriesv2.MirrorByTagOnly)
	// Blocked entries exist before the insecure flags spread, so a
	// blocked scope inside an insecure one is both.
	for _, s := range blocked {
		b.entry(s)
	}
	for _, s := range insecure {
		b.flagInsecure(s)
	}
	for _, s := range blocked {
		b.flagBlocked(s)
	}
	if err := b.spreadMirrors(append(digestSets, tagSets...)); err != nil {
		return nil, err
	}
	sort.SliceStable(b.regs, func(i, j int) bool { return scopeOf(b.regs[i]) < scopeOf(b.regs[j]) })
	return &Config{Registries: sysregistriesv2.V2RegistriesConf{Registries: b.regs}, CAs: cas}, nil
}

// builder edits a list of registries.conf entries, one per scope.
type builder struct{ regs []sysregistriesv2.Registry }

// scopeOf is the scope an entry was made for: its wildcard prefix, or its
// location (MCO writes a plain scope as location, prefix left empty).
func scopeOf(r sysregistriesv2.Registry) string {
	if r.Prefix != "" {
		return r.Prefix
	}
	return r.Location
}

// entry returns the index of the entry for scope, adding it if missing.
func (b *builder) entry(scope string) int {
	for i, r := range b.regs {
		if scopeOf(r) == scope {
			return i
		}
	}
	r := sysregistriesv2.Registry{}
	if hostOf(scope) == "" {
		r.Prefix = scope
	} else {
		r.Location = scope
	}
	b.regs = append(b.regs, r)
	return len(b.regs) - 1
}

// addMirrors gives each source's entry its mirrors, restricted to digest
// or tag references, and blocks the source for NeverContactSource.
func (b *builder) addMirrors(sets []mergedSet, pullFrom string) {
	for _, s := range sets {
		r := &b.regs[b.entry(s.source)]
		r.Blocked = r.Blocked || s.never
		for _, m := range s.mirrors {
			r.Mirrors = append(r.Mirrors, sysregistriesv2.Endpoint{Location: m, PullFromMirror: pullFrom})
		}
	}
}

// flagInsecure marks scope, every entry inside it and every mirror inside
// it insecure: containers/image reads only the most precise entry, and a
// mirror's own flag.
func (b *builder) flagInsecure(scope string) {
	b.regs[b.entry(scope)].Insecure = true
	for i := range b.regs {
		r := &b.regs[i]
		if nested(scopeOf(*r), scope) {
			r.Insecure = true
		}
		for j := range r.Mirrors {
			if nested(r.Mirrors[j].Location, scope) {
				r.Mirrors[j].Insecure = true
			}
		}
	}
}

// flagBlocked blocks scope and every entry inside it. Mirrors are not
// flagged: containers/image checks a mirror's own entry when it connects.
func (b *builder) flagBlocked(scope string) {
	b.regs[b.entry(scope)].Blocked = true
	for i := range b.regs {
		if nested(scopeOf(b.regs[i]), scope) {
			b.regs[i].Blocked = true
		}
	}
}

// spreadMirrors copies a mirrored scope's mirrors to the more precise
// entries inside it that have none of their own (made for an insecure or
// blocked scope): containers/image would otherwise find that entry and
// no mirror. Each mirror location gets the part of the entry's scope
// below the mirrored one, as PullSourcesFromReference would rewrite it.
func (b *builder) spreadMirrors(sets []mergedSet) error {
	for _, s := range sets {
		src := b.regs[b.entry(s.source)]
		for i := range b.regs {
			r := &b.regs[i]
			scope := scopeOf(*r)
			if scope == s.source || !nested(scope, s.source) || len(r.Mirrors) > 0 {
				continue
			}
			n := matchLen(scope, s.source)
			if n == -1 {
				return fmt.Errorf("internal error: %s is inside %s but does not match it", scope, s.source)
			}
			for _, m := range src.Mirrors {
				m.Location += scope[n:]
				r.Mirrors = append(r.Mirrors, m)
			}
		}
	}
	return nil
}

// imageScopes checks and returns the image config's insecure (with
// ClusterInputs.Insecure) and blocked scopes.
func imageScopes(in ClusterInputs) (insecure, blocked []string, err error) {
	var errs []error
	check := func(where string, scopes []string) []string {
		for i, s := range scopes {
			if e := checkScope(s, true); e != nil {
				errs = append(errs, fmt.Errorf("%s[%d]: %q: %w", where, i, s, e))
			}
		}
		return scopes
	}
	if img := in.Image; img != nil {
		where := "Image " + img.Name + ": spec.registrySources."
		rs := img.Spec.RegistrySources
		insecure = check(where+"insecureRegistries", rs.InsecureRegistries)
		blocked = check(where+"blockedRegistries", rs.BlockedRegistries)
		check(where+"allowedRegistries", rs.AllowedRegistries)
		if len(rs.BlockedRegistries) > 0 && len(rs.AllowedRegistries) > 0 {
			errs = append(errs, fmt.Errorf("Image %s: spec.registrySources: only one of blockedRegistries and allowedRegistries may be set", img.Name))
		}
	}
	for i, s := range in.Insecure {
		if e := checkScope(s, false); e != nil {
			errs = append(errs, fmt.Errorf("insecure registry %d (--insecure-registry, KILN_INSECURE_REGISTRY): %q: %w", i, s, e))
		}
	}
	insecure = append(insecure, in.Insecure...)
	return insecure, blocked, errors.Join(errs...)
}

// mirrorRule is one entry of a mirror set: a source and its mirrors.
type mirrorRule struct {
	source  string
	mirrors []string
	never   bool
}

// mirrorRules checks every IDMS, ICSP (digest mirrors) and ITMS (tag
// mirrors) entry. As MCO does, an ICSP entry is an IDMS entry without
// mirrorSourcePolicy, a source listed among its own mirrors is refused
// with NeverContactSource, and one source may not be given different
// mirrorSourcePolicies by any two entries of any kind.
func mirrorRules(in ClusterInputs) (digest, tag []mirrorRule, err error) {
	c := ruleChecker{policy: map[string]policyAt{}}
	for _, o := range in.IDMS {
		for i, e := range o.Spec.ImageDigestMirrors {
			where := fmt.Sprintf("ImageDigestMirrorSet %s: spec.imageDigestMirrors[%d]", o.Name, i)
			digest = append(digest, c.check(where, e.Source, imageMirrors(e.Mirrors), e.MirrorSourcePolicy, true))
		}
	}
	for _, o := range in.ICSP {
		for i, e := range o.Spec.RepositoryDigestMirrors {
			where := fmt.Sprintf("ImageContentSourcePolicy %s: spec.repositoryDigestMirrors[%d]", o.Name, i)
			digest = append(digest, c.check(where, e.Source, e.Mirrors, "", false))
		}
	}
	for _, o := range in.ITMS {
		for i, e := range o.Spec.ImageTagMirrors {
			where := fmt.Sprintf("ImageTagMirrorSet %s: spec.imageTagMirrors[%d]", o.Name, i)
			tag = append(tag, c.check(where, e.Source, imageMirrors(e.Mirrors), e.MirrorSourcePolicy, true))
		}
	}
	return digest, tag, errors.Join(c.errs...)
}

func imageMirrors(ms []configv1.ImageMirror) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m)
	}
	return out
}

type policyAt struct {
	policy configv1.MirrorSourcePolicy
	where  string
}

type ruleChecker struct {
	policy map[string]policyAt // by source
	errs   []error
}

// check validates one entry; unique is the apiserver's listType=set on
// IDMS and ITMS mirrors (ICSP mirrors may repeat).
func (c *ruleChecker) check(where, source string, mirrors []string, policy configv1.MirrorSourcePolicy, unique bool) mirrorRule {
	fail := func(field, format string, args ...any) {
		c.errs = append(c.errs, fmt.Errorf("%s.%s: %s", where, field, fmt.Sprintf(format, args...)))
	}
	if err := checkScope(source, true); err != nil {
		fail("source", "%q: %v", source, err)
	}
	switch policy {
	case "":
		policy = configv1.AllowContactingSource
	case configv1.AllowContactingSource, configv1.NeverContactSource:
	default:
		fail("mirrorSourcePolicy", "%q: must be %s or %s", policy, configv1.AllowContactingSource, configv1.NeverContactSource)
	}
	if prev, ok := c.policy[source]; ok && prev.policy != policy {
		fail("mirrorSourcePolicy", "%s conflicts with %s of %s for the same source %q", policy, prev.policy, prev.where, source)
	} else if !ok {
		c.policy[source] = policyAt{policy, where}
	}
	seen := map[string]bool{}
	for i, m := range mirrors {
		field := fmt.Sprintf("mirrors[%d]", i)
		switch err := checkScope(m, false); {
		case err != nil:
			fail(field, "%q: %v", m, err)
		case m == source && policy == configv1.NeverContactSource:
			fail(field, "%q is the source itself, which mirrorSourcePolicy NeverContactSource forbids contacting", m)
		case unique && seen[m]:
			fail(field, "%q is listed twice", m)
		}
		seen[m] = true
	}
	return mirrorRule{source: source, mirrors: mirrors, never: policy == configv1.NeverContactSource}
}
