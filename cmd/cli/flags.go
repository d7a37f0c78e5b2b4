package cli

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/signing"
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
// (step.LoadRESTConfig, controller-runtime's order).
const kubeconfigUsage = "kubeconfig file; empty means $KUBECONFIG, then the in-cluster config, then ~/.kube/config"

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
	stringVar(fs, env, &o.Work, "work", EnvWork, "root of the work workspace")
	stringVar(fs, env, &o.ResultsDir, "results-dir", EnvResultsDir, "folder the Tekton results are written to")
}

// bindRegistry binds how registries are reached.
func bindRegistry(fs *pflag.FlagSet, env lookupEnv, o *step.RegistryOptions) {
	stringVar(fs, env, &o.AuthFile, "registry-auth-file", EnvRegistryAuthFile, "registry credentials (docker config.json or containers auth.json); empty means the default keychain")
	sliceVar(fs, env, &o.Insecure, "insecure-registry", EnvInsecureRegistry, "registry host[:port] reached over plain HTTP (repeatable)")
	stringVar(fs, env, &o.ConfigDir, "registries-config", EnvRegistriesConfig, "registries folder: registries.conf (mirrors, insecure and blocked registries) and certs.d/<host>/ca.crt; empty means none")
}

// bindKube binds where cluster objects come from.
func bindKube(fs *pflag.FlagSet, o *step.KubeOptions) {
	fs.StringVar(&o.Source, "source", o.Source, `where inputs come from: "cluster" or "dir:PATH" (a folder of manifests)`)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, kubeconfigUsage)
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
func bindAttest(fs *pflag.FlagSet, env lookupEnv, o *signing.AttestOptions) {
	fs.StringVar(&o.KeyPath, "key", o.KeyPath, "cosign private key file (a mounted Secret; never a flag value)")
	fs.StringVar(&o.PasswordFile, "key-password-file", o.PasswordFile, "file holding the key password (cosign.password next to cosign.key); when absent, --key-password-env is used")
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
