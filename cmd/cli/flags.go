package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
)

// Environment variables that give flags their defaults, so a Task (or the
// trigger's local mode) sets them once for every step. Help shows them
// after the flag's description: "(env KILN_POOL)".
const (
	EnvWork             = "KILN_WORK"
	EnvResultsDir       = "KILN_RESULTS_DIR"
	EnvPool             = "KILN_POOL"
	EnvRunID            = "KILN_RUN_ID"
	EnvRegistryAuthFile = "REGISTRY_AUTH_FILE"
	EnvInsecureRegistry = "KILN_INSECURE_REGISTRY"
	EnvRegistriesConfig = "KILN_REGISTRIES_CONFIG"
)

// kubeconfigUsage says where a cluster config comes from without the flag
// (kube.LoadRESTConfig, controller-runtime's order).
const kubeconfigUsage = "kubeconfig file; empty means $KUBECONFIG, then the in-cluster config, then ~/.kube/config"

// contextUsage: a context is a kubeconfig's, so the in-cluster config is
// not tried when one is named (kube.LoadRESTConfig).
const contextUsage = "kubeconfig context to use (from --kubeconfig, else $KUBECONFIG or ~/.kube/config; never the in-cluster config); empty means the current-context"

// stringVar binds a string flag whose default is *p, or the value of env
// when it is set.
func stringVar(fs *pflag.FlagSet, env lookupEnv, p *string, name, envName, usage string) {
	if v, ok := env(envName); ok {
		*p = v
	}
	fs.StringVar(p, name, *p, usage+" (env "+envName+")")
}

// sliceVar binds a repeatable flag whose default is *p, or env's value
// split at commas.
func sliceVar(fs *pflag.FlagSet, env lookupEnv, p *[]string, name, envName, usage string) {
	if v, ok := env(envName); ok && v != "" {
		*p = strings.Split(v, ",")
	}
	fs.StringSliceVar(p, name, *p, usage+" (env "+envName+", comma separated)")
}

// bindOptions binds the shared flags; withPool is false for a stage that
// works on the whole cluster (bootimages).
func bindOptions(fs *pflag.FlagSet, env lookupEnv, o *step.Options, withPool bool) {
	if withPool {
		stringVar(fs, env, &o.Pool, "pool", EnvPool, "MachineConfigPool name (required)")
	}
	// No default folder: a step writes only where it is told.
	stringVar(fs, env, &o.Work, "work", EnvWork, "root of the work workspace (required)")
	stringVar(fs, env, &o.ResultsDir, "results-dir", EnvResultsDir, "folder the Tekton results are written to, /tekton/results in a Task (required)")
}

// bindRegistry binds how registries are reached.
func bindRegistry(fs *pflag.FlagSet, env lookupEnv, o *registry.RegistryOptions) {
	stringVar(fs, env, &o.AuthFile, "registry-auth-file", EnvRegistryAuthFile, "registry credentials (docker config.json or containers auth.json); empty means the default keychain")
	sliceVar(fs, env, &o.Insecure, "insecure-registry", EnvInsecureRegistry, "registry host[:port] reached over plain HTTP (repeatable)")
	stringVar(fs, env, &o.ConfigDir, "registries-config", EnvRegistriesConfig, "registries folder: registries.conf (mirrors, insecure and blocked registries) and certs.d/<host>/ca.crt; empty means none")
}

// bindKube binds where cluster objects come from.
func bindKube(fs *pflag.FlagSet, o *kube.KubeOptions) {
	fs.StringVar(&o.Source, "source", o.Source, `where inputs come from: "cluster" or "dir:PATH" (a folder of manifests)`)
	bindKubeconfig(fs, &o.Kubeconfig, &o.Context)
}

// bindKubeconfig binds which cluster a kubeconfig names, the same in
// both binaries (kubectl's flag names).
func bindKubeconfig(fs *pflag.FlagSet, kubeconfig, context *string) {
	fs.StringVar(kubeconfig, "kubeconfig", *kubeconfig, kubeconfigUsage)
	fs.StringVar(context, "context", *context, contextUsage)
}

// bindFormat binds -o/--output, the format of a command's result (tkn's
// and cosign's name for it); formats are step.FormatText and FormatJSON.
func bindFormat(fs *pflag.FlagSet, format *string) {
	if *format == "" {
		*format = step.FormatText
	}
	fs.StringVarP(format, "output", "o", *format, "output format: text or json (json: the result alone on stdout, progress on stderr)")
}

// deprecatedAlias binds old as another name of the flag now: the same
// value, hidden from help, and cobra prints "Flag --old has been
// deprecated, use --now instead" on stderr when it is used. Kept for one
// release after a rename.
func deprecatedAlias(fs *pflag.FlagSet, old, now string) {
	f := fs.Lookup(now)
	fs.Var(f.Value, old, f.Usage)
	fs.Lookup(old).NoOptDefVal = f.NoOptDefVal
	if err := fs.MarkDeprecated(old, "use --"+now+" instead"); err != nil {
		panic(err) // old was bound just above
	}
}

// bindIdentity binds kiln's signing identity, with cosign's flag names.
func bindIdentity(fs *pflag.FlagSet, o *step.IdentityOptions) {
	fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "cosign public key of kiln's signing identity (a missing file means none)")
	fs.StringVar(&o.CertificateIdentity, "certificate-identity", o.CertificateIdentity, "keyless: the signing certificate's identity (SAN), matched exactly")
	fs.StringVar(&o.CertificateOIDCIssuer, "certificate-oidc-issuer", o.CertificateOIDCIssuer, "keyless: the signing certificate's OIDC issuer, matched exactly")
	fs.StringVar(&o.CertificateRoots, "certificate-roots", o.CertificateRoots, "keyless: Fulcio root (and intermediate) certificates, PEM file")
}

// bindAttest binds the cosign key, password and keyless settings of every
// stage that signs (image-sign, kmod-build, kmod-sign).
func bindAttest(fs *pflag.FlagSet, env lookupEnv, o *sign.AttestOptions) {
	fs.StringVar(&o.KeyPath, "key", o.KeyPath, "cosign private key file (a mounted Secret; never a flag value)")
	fs.StringVar(&o.PasswordFile, "key-password-file", o.PasswordFile, "file holding the key password (cosign.password next to cosign.key); when absent, the password is read from the environment variable below")
	fs.StringVar(&o.PasswordEnv, "key-password-env", o.PasswordEnv, "environment variable holding the key password")
	fs.BoolVar(&o.Keyless, "keyless", o.Keyless, "sign with Fulcio/Rekor instead of --key")
	fs.StringVar(&o.FulcioURL, "fulcio-url", o.FulcioURL, "Fulcio URL (keyless)")
	fs.StringVar(&o.RekorURL, "rekor-url", o.RekorURL, `Rekor URL (keyless); "" skips the transparency log`)
	fs.StringVar(&o.IDTokenPath, "identity-token-path", o.IDTokenPath, "OIDC token file (keyless)")
	stringVar(fs, env, &o.RunID, "run-id", EnvRunID, "id of this run (PipelineRun name), recorded in the provenance")
}

// hideDefault keeps a machine-dependent default out of help (and so out of
// README), which then says what it is in words.
func hideDefault(fs *pflag.FlagSet, name string) {
	fs.Lookup(name).DefValue = ""
}

// checkOldFolderFlag refuses a format given to a flag that used to name
// a folder (--output before --output-dir): "--output json" meant a
// folder called json, made in the current directory. A run writes no
// folder it was not plainly given.
func checkOldFolderFlag(c *cobra.Command, old, now string) error {
	f := c.Flags().Lookup(old)
	if f == nil || !f.Changed {
		return nil
	}
	if v := f.Value.String(); v == step.FormatText || v == step.FormatJSON {
		return fmt.Errorf("--%s %q: --%s names a folder (it is now --%s), and %s has no output formats",
			old, v, old, now, c.CommandPath())
	}
	return nil
}
