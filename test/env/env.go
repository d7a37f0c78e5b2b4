package env

import "testing"

// Options choose the parts to start, in the manner of cluster-api's
// test/framework inputs.
type Options struct {
	Kube     bool
	Registry bool
	Buildah  bool
	// RegistryAddr is the IP the registry binds (default 127.0.0.1).
	RegistryAddr string
}

// Env holds the parts that were started; the others are nil.
type Env struct {
	Kube     *Kube
	Registry *Registry
	Buildah  *Buildah
}

// Start starts the parts o asks for.
func Start(t testing.TB, o Options) *Env {
	t.Helper()
	e := &Env{}
	if o.Registry {
		e.Registry = StartRegistry(t, RegistryOptions{Addr: o.RegistryAddr})
	}
	if o.Buildah {
		var insecure []string
		if e.Registry != nil {
			insecure = append(insecure, e.Registry.Host)
		}
		e.Buildah = NewBuildah(t, BuildahOptions{InsecureRegistries: insecure})
	}
	if o.Kube {
		e.Kube = StartKube(t)
	}
	return e
}
