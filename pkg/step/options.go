package step

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/apis"
)

// Options are the flags every stage shares. Stage option structs embed it
// and add the sub-options they need (RegistryOptions, SigningOptions,
// KubeOptions), in the manner of cosign's options package.
type Options struct {
	// Work is the root of the "work" workspace.
	Work string
	// ResultsDir is where results are written; Tekton's is /tekton/results.
	ResultsDir string
	// Pool is the MachineConfigPool the run is for.
	Pool string
}

// AddFlags registers the shared flags. Defaults come from the environment
// so a Task can set them once for all steps.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Work, "work", envOr("KILN_WORK", "/workspace/work"), "root of the work workspace")
	fs.StringVar(&o.ResultsDir, "results-dir", envOr("KILN_RESULTS_DIR", "/tekton/results"), "folder Tekton reads results from")
	fs.StringVar(&o.Pool, "pool", os.Getenv("KILN_POOL"), "MachineConfigPool name")
}

// Validate reports the first missing or malformed shared flag.
func (o *Options) Validate() error {
	if o.Work == "" {
		return usageErrorf("--work is required")
	}
	if o.Pool == "" {
		return usageErrorf("--pool is required")
	}
	if strings.ContainsAny(o.Pool, "/ ") {
		return usageErrorf("--pool %q: not a MachineConfigPool name", o.Pool)
	}
	return nil
}

// Workspace returns the layout rooted at --work.
func (o *Options) Workspace() Workspace { return Workspace{Root: o.Work} }

// Results returns a result collector writing into --results-dir.
func (o *Options) Results() *Results { return NewResults(o.ResultsDir) }

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

// AddFlags registers the registry flags.
func (o *RegistryOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.AuthFile, "registry-auth-file", os.Getenv("REGISTRY_AUTH_FILE"), "registry credentials (docker config.json format)")
	// The environment default lets a runner (the trigger's local mode)
	// reach its own plain-HTTP registry without editing every Task.
	var insecure []string
	if v := os.Getenv("KILN_INSECURE_REGISTRY"); v != "" {
		insecure = strings.Split(v, ",")
	}
	fs.StringSliceVar(&o.Insecure, "insecure-registry", insecure, "registry host[:port] reached over plain HTTP (repeatable; default $KILN_INSECURE_REGISTRY, comma separated)")
	fs.StringVar(&o.ConfigDir, "registries-config", os.Getenv("KILN_REGISTRIES_CONFIG"), "registries folder: registries.conf (mirrors, insecure and blocked registries) and certs.d/<host>/ca.crt; empty means none")
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

// SigningOptions name a cosign key. The key itself is read from a file (a
// mounted Secret) and never from a flag, so it cannot show up in a pod spec
// or a process listing.
type SigningOptions struct {
	KeyPath string
	// PasswordEnv names the environment variable holding the key password.
	PasswordEnv string
}

// AddFlags registers the signing flags.
func (o *SigningOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.KeyPath, "key", "/etc/kiln/signing/cosign.key", "cosign private key file (mounted Secret)")
	fs.StringVar(&o.PasswordEnv, "key-password-env", "COSIGN_PASSWORD", "environment variable holding the key password")
}

// Password returns the key password from the environment.
func (o *SigningOptions) Password() []byte { return []byte(os.Getenv(o.PasswordEnv)) }

// KubeOptions say where cluster objects come from.
type KubeOptions struct {
	// Kubeconfig is a kubeconfig path; empty means in-cluster or $KUBECONFIG.
	Kubeconfig string
	// Source is "cluster" or "dir:PATH" (a directory of manifests).
	Source string
}

// AddFlags registers the kube flags.
func (o *KubeOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file; empty means in-cluster")
	fs.StringVar(&o.Source, "source", "cluster", `where inputs come from: "cluster" or "dir:PATH"`)
}

// SourceDir returns the manifest directory of a dir: source, or "" for the cluster.
func (o *KubeOptions) SourceDir() (string, error) {
	switch {
	case o.Source == "cluster":
		return "", nil
	case strings.HasPrefix(o.Source, "dir:") && len(o.Source) > len("dir:"):
		return strings.TrimPrefix(o.Source, "dir:"), nil
	default:
		return "", usageErrorf(`--source %q: want "cluster" or "dir:PATH"`, o.Source)
	}
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// RESTConfig returns the cluster's client config: --kubeconfig when given,
// else the in-cluster config of a Tekton step's ServiceAccount.
func (o *KubeOptions) RESTConfig() (*rest.Config, error) {
	if o.Kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading kubeconfig %s: %w", o.Kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("loading in-cluster config (no --kubeconfig): %w", err)
	}
	return cfg, nil
}

// Client returns a client with kiln's scheme that can also watch.
func (o *KubeOptions) Client() (client.WithWatch, error) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, err
	}
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to the cluster: %w", err)
	}
	return c, nil
}
