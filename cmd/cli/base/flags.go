package base

import (
	"strings"

	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
)

// LookupEnv reads an environment default; tests and the docs generator
// pass their own.
type LookupEnv func(string) (string, bool)

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

// StringVar binds a string flag whose default is *p, or the value of env
// when it is set.
func StringVar(fs *pflag.FlagSet, env LookupEnv, p *string, name, envName, usage string) {
	if v, ok := env(envName); ok {
		*p = v
	}
	fs.StringVar(p, name, *p, usage+" (env "+envName+")")
}

// SliceVar binds a repeatable flag whose default is *p, or env's value
// split at commas.
func SliceVar(fs *pflag.FlagSet, env LookupEnv, p *[]string, name, envName, usage string) {
	if v, ok := env(envName); ok && v != "" {
		*p = strings.Split(v, ",")
	}
	fs.StringSliceVar(p, name, *p, usage+" (env "+envName+", comma separated)")
}

// BindOptions binds the shared flags; withPool is false for a stage that
// works on the whole cluster (bootimages).
func BindOptions(fs *pflag.FlagSet, env LookupEnv, o *step.Options, withPool bool) {
	if withPool {
		StringVar(fs, env, &o.Pool, "pool", EnvPool, "MachineConfigPool name (required)")
	}
	// No default folder: a step writes only where it is told.
	StringVar(fs, env, &o.Work, "work", EnvWork, "root of the work workspace (required)")
	StringVar(fs, env, &o.ResultsDir, "results-dir", EnvResultsDir, "folder the Tekton results are written to, /tekton/results in a Task (required)")
}

// BindRegistry binds how registries are reached.
func BindRegistry(fs *pflag.FlagSet, env LookupEnv, o *registry.RegistryOptions) {
	StringVar(fs, env, &o.AuthFile, "registry-auth-file", EnvRegistryAuthFile, "registry credentials (docker config.json or containers auth.json); empty means the default keychain")
	SliceVar(fs, env, &o.Insecure, "insecure-registry", EnvInsecureRegistry, "registry host[:port] reached over plain HTTP (repeatable)")
	StringVar(fs, env, &o.ConfigDir, "registries-config", EnvRegistriesConfig, "registries folder: registries.conf (mirrors, insecure and blocked registries) and certs.d/<host>/ca.crt; empty means none")
}

// BindIdentity binds kiln's signing identity, with cosign's flag names.
func BindIdentity(fs *pflag.FlagSet, o *step.IdentityOptions) {
	fs.StringVar(&o.PublicKey, "public-key", o.PublicKey, "cosign public key of kiln's signing identity (a missing file means none)")
	fs.StringVar(&o.CertificateIdentity, "certificate-identity", o.CertificateIdentity, "keyless: the signing certificate's identity (SAN), matched exactly")
	fs.StringVar(&o.CertificateOIDCIssuer, "certificate-oidc-issuer", o.CertificateOIDCIssuer, "keyless: the signing certificate's OIDC issuer, matched exactly")
	fs.StringVar(&o.CertificateRoots, "certificate-roots", o.CertificateRoots, "keyless: Fulcio root (and intermediate) certificates, PEM file")
}

// BindFormat binds -o/--output, the format of a command's result (tkn's
// and cosign's name for it); formats are step.FormatText and FormatJSON.
func BindFormat(fs *pflag.FlagSet, format *string) {
	if *format == "" {
		*format = step.FormatText
	}
	fs.StringVarP(format, "output", "o", *format, "output format: text or json (json: the result alone on stdout, progress on stderr)")
}
