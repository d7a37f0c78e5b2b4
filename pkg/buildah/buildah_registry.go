package buildah

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// buildahCall is how one buildah command reaches registries the way
// registry.Remote does: its flags and the variables added to its
// environment.
type buildahCall struct {
	args []string
	env  []string
}

// pullCall sets up `buildah bud` for pulls. With a registry.Config, buildah
// reads it as registries.conf (CONTAINERS_REGISTRIES_CONF), so it applies
// the same mirrors, insecure and blocked flags as every other registry
// read of kiln; the global --tls-verify=false is then given only when an
// insecure host of the pulls (the flag's list) is not in that file. bud
// has one --tls-verify and one --cert-dir for all its pulls: the CAs of
// every host it may pull from (sources and mirrors) go into one folder.
// tmp is a folder the caller removes.
func pullCall(r registry.Remote, pulls []string, tmp string) (buildahCall, error) {
	var c buildahCall
	if r.AuthFile != "" {
		c.args = append(c.args, "--authfile", r.AuthFile)
	}
	hosts, err := pullHosts(r, pulls)
	if err != nil {
		return c, err
	}
	if slices.ContainsFunc(hosts, func(h string) bool {
		return slices.Contains(r.Insecure, h) && !(r.Config != nil && r.Config.Insecure(h))
	}) {
		c.args = append(c.args, "--tls-verify=false")
	}
	if r.Config == nil {
		return c, nil
	}
	// Only registries.conf: the CAs go to --cert-dir below.
	dir := filepath.Join(tmp, "registries")
	conf := &registry.Config{Registries: r.Config.Registries}
	if err := conf.WriteDir(dir); err != nil {
		return c, fmt.Errorf("writing registries.conf for buildah: %w", err)
	}
	c.env = append(c.env, "CONTAINERS_REGISTRIES_CONF="+filepath.Join(dir, registry.RegistriesConfFile))
	certs, err := certDir(r, hosts, filepath.Join(tmp, "pull-certs"))
	if err != nil || certs == "" {
		return c, err
	}
	c.args = append(c.args, "--cert-dir", certs)
	return c, nil
}

// pushCall sets up `buildah push` to host, the named registry only: no
// registries.conf (mirrors are for pulls, and kiln never pushes to one),
// --tls-verify and --cert-dir for that host alone.
func pushCall(r registry.Remote, host, tmp string) (buildahCall, error) {
	var c buildahCall
	if r.AuthFile != "" {
		c.args = append(c.args, "--authfile", r.AuthFile)
	}
	if slices.Contains(r.Insecure, host) || (r.Config != nil && r.Config.Insecure(host)) {
		c.args = append(c.args, "--tls-verify=false")
	}
	if r.Config == nil {
		return c, nil
	}
	certs, err := certDir(r, []string{host}, filepath.Join(tmp, "push-certs"))
	if err != nil || certs == "" {
		return c, err
	}
	c.args = append(c.args, "--cert-dir", certs)
	return c, nil
}

// pullHosts lists the registries the pulls may reach, mirrors included, in
// order and without repeats. A reference that does not parse is left to
// buildah to report.
func pullHosts(r registry.Remote, pulls []string) ([]string, error) {
	var hosts []string
	add := func(h string) {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	for _, p := range pulls {
		if p == "" {
			continue
		}
		ref, err := r.ParseRef(p)
		if err != nil {
			continue
		}
		if r.Config == nil {
			add(ref.Context().RegistryStr())
			continue
		}
		sources, err := r.Config.PullSources(ref)
		if err != nil {
			return nil, fmt.Errorf("resolving mirrors of %s: %w", p, err)
		}
		for _, s := range sources {
			add(s.Ref.Context().RegistryStr())
		}
	}
	return hosts, nil
}

// certDir writes the CAs the Config trusts for hosts into dir, one
// <host>.crt each (containers/image adds every *.crt of --cert-dir to the
// system roots), and returns dir, or "" when none of the hosts has one.
// buildah's --cert-dir applies to every host of the call, so a CA given
// for one pulled host is trusted for the others of the same call too;
// kiln's own Go reads keep each CA to its host.
func certDir(r registry.Remote, hosts []string, dir string) (string, error) {
	n := 0
	for _, h := range hosts {
		ca := r.Config.CA(h)
		if len(ca) == 0 {
			continue
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("writing registry CAs for buildah: %w", err)
		}
		// ":" of host:port is fine in a file name; "/" cannot occur.
		f := filepath.Join(dir, strings.ReplaceAll(h, "/", "_")+".crt")
		if err := os.WriteFile(f, ca, 0o600); err != nil {
			return "", fmt.Errorf("writing registry CAs for buildah: %w", err)
		}
		n++
	}
	if n == 0 {
		return "", nil
	}
	return dir, nil
}
