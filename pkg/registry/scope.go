package registry

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"go.podman.io/image/v5/docker/reference"
	"k8s.io/apimachinery/pkg/util/validation"
)

// A scope is what registries.conf matches references against
// (containers-registries.conf(5), "Choosing a Registry TOML table"):
// host[:port], a namespace or repository under it, or a *.domain wildcard
// that matches every subdomain of domain.

// anchoredDomain is a registry host[:port], as containers/image parses it;
// compiled on first use (it is a large pattern), not at every start.
var anchoredDomain = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^" + reference.DomainRegexp.String() + "$") })

// domainErrs says why d is not a DNS name without port (what may follow
// "*." in a wildcard scope), with apimachinery's rules and messages: an
// RFC 1123 subdomain of at most 253 characters whose labels are at most
// 63. DNS names are case-insensitive, so upper case is lowered first.
func domainErrs(d string) []string {
	d = strings.ToLower(d)
	if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
		return errs
	}
	for _, l := range strings.Split(d, ".") {
		if errs := validation.IsDNS1123Label(l); len(errs) > 0 {
			return errs
		}
	}
	return nil
}

// checkScope says why s is not a scope, or nil. wildcard allows *.domain
// (mirror sources, insecure and blocked registries; never a mirror). The
// rules are those of the openshift/api validation patterns of
// ImageDigestMirrors.source and ImageMirror, stated with containers/image's
// grammar, so directory mode refuses what the apiserver would.
func checkScope(s string, wildcard bool) error {
	switch {
	case s == "":
		return errors.New("empty")
	case strings.Contains(s, "://"):
		return errors.New("a registry scope has no URL scheme: write host[:port][/namespace...]")
	case strings.HasPrefix(s, "*."):
		if !wildcard {
			return errors.New("a wildcard is not allowed here")
		}
		if errs := domainErrs(s[2:]); len(errs) > 0 {
			return errors.New("a wildcard scope is *. followed by a domain, without port, path, tag or digest: " + strings.Join(errs, "; "))
		}
		return nil
	case strings.Contains(s, "*"):
		return errors.New("a wildcard may only be a leading *. followed by a domain")
	case strings.ContainsAny(s, "@"):
		return errors.New("a scope has no digest")
	}
	host, path, hasPath := strings.Cut(s, "/")
	if !anchoredDomain().MatchString(host) {
		return errors.New("not a registry host[:port]")
	}
	if !hasPath {
		return nil
	}
	if path == "" || strings.HasSuffix(path, "/") {
		return errors.New("a namespace or repository path has no empty element")
	}
	if _, err := reference.WithName(s); err != nil {
		return errors.New("not host[:port]/namespace[/repository]: path elements are lower case, with . _ - separators, and there is no tag")
	}
	return nil
}

// matchLen returns how much of ref (a host, repository or image
// reference, always host first) the registries.conf prefix matches, or -1.
// This is containers/image's matching (sysregistriesv2 refMatchingPrefix,
// unexported there): the longest matching prefix wins in FindRegistry, and
// PullSourcesFromReference replaces the matched part with a mirror's
// location. Like containers/image, "example.com" also matches
// "example.com:5000"; a wildcard matches the first occurrence of .domain
// in the host.
func matchLen(ref, prefix string) int {
	if rest, ok := strings.CutPrefix(prefix, "*"); ok {
		i := strings.Index(ref, rest)
		if i == -1 || strings.Contains(ref[:i], "/") {
			return -1
		}
		i += len(rest)
		if i == len(ref) || strings.ContainsRune(":/@", rune(ref[i])) {
			return i
		}
		return -1
	}
	if !strings.HasPrefix(ref, prefix) {
		return -1
	}
	if len(ref) == len(prefix) || strings.ContainsRune(":/@", rune(ref[len(prefix)])) {
		return len(prefix)
	}
	return -1
}

// nested reports whether scope sub lies inside scope super: the same
// scope, a namespace or repository below it, or (super a wildcard) any
// scope on a subdomain of its domain. This is how MCO carries insecure and
// blocked flags, and mirrors, from a scope to the more precise entries
// below it (runtime-utils ScopeIsNestedInsideScope), since containers/image
// only reads the most precise matching entry.
func nested(sub, super string) bool {
	if sub == super || strings.HasPrefix(sub, super+"/") {
		return true
	}
	domain, ok := strings.CutPrefix(super, "*")
	if !ok {
		return false
	}
	host, _, _ := strings.Cut(sub, "/")
	host, _, _ = strings.Cut(host, ":")
	return strings.HasSuffix(host, domain)
}

// hostOf returns the host[:port] of a scope or location ("" for a
// wildcard).
func hostOf(scope string) string {
	if strings.HasPrefix(scope, "*.") {
		return ""
	}
	host, _, _ := strings.Cut(scope, "/")
	return host
}

// caHost turns an additionalTrustedCA ConfigMap key into the host[:port]
// it trusts. ConfigMap keys cannot hold ":", so OpenShift writes a port as
// "..": registry.example.com..5000 is registry.example.com:5000 (MCO
// replaces every ".." by ":" and uses the result as a certs.d folder name
// unchecked; kiln refuses a key that is not a host, port 1-65535).
func caHost(key string) (string, error) {
	host, port, hasPort := strings.Cut(key, "..")
	if errs := domainErrs(host); len(errs) > 0 {
		return "", errors.New("not a registry host or host..port: " + strings.Join(errs, "; "))
	}
	if !hasPort {
		return host, nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
		return "", errors.New("not a registry host or host..port: the port after .. is a number from 1 to 65535")
	}
	return host + ":" + port, nil
}
