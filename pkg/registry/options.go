package registry

// RegistryOptions say how to reach container registries.
type RegistryOptions struct {
	// AuthFile is a docker config.json (or containers auth.json); empty means
	// the default keychain.
	AuthFile string
	// Insecure lists registries reached over plain HTTP (host[:port]).
	Insecure []string
	// ConfigDir is a registries folder (registries.conf and
	// certs.d/<host[:port]>/ca.crt): mirrors, per-registry insecure and
	// blocked flags and CAs. Empty means none; Tekton turns the path of an
	// unbound optional workspace into "".
	ConfigDir string
}

// IsInsecure reports whether host was named with --insecure-registry.
func (o *RegistryOptions) IsInsecure(host string) bool {
	for _, h := range o.Insecure {
		if h == host {
			return true
		}
	}
	return false
}
