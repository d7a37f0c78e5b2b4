package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
)

// kubeconfigUsage says where a cluster config comes from without the flag
// (kube.LoadRESTConfig, controller-runtime's order).
const kubeconfigUsage = "kubeconfig file; empty means $KUBECONFIG, then the in-cluster config, then ~/.kube/config"

// contextUsage: a context is a kubeconfig's, so the in-cluster config is
// not tried when one is named (kube.LoadRESTConfig).
const contextUsage = "kubeconfig context to use (from --kubeconfig, else $KUBECONFIG or ~/.kube/config; never the in-cluster config); empty means the current-context"

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

// bindAttest binds the cosign key, password and keyless settings of every
// stage that signs (image-sign, kmod-build, kmod-sign).
func bindAttest(fs *pflag.FlagSet, env base.LookupEnv, o *sign.AttestOptions) {
	fs.StringVar(&o.KeyPath, "key", o.KeyPath, "cosign private key file (a mounted Secret; never a flag value)")
	fs.StringVar(&o.PasswordFile, "key-password-file", o.PasswordFile, "file holding the key password (cosign.password next to cosign.key); when absent, the password is read from the environment variable below")
	fs.StringVar(&o.PasswordEnv, "key-password-env", o.PasswordEnv, "environment variable holding the key password")
	fs.BoolVar(&o.Keyless, "keyless", o.Keyless, "sign with Fulcio/Rekor instead of --key")
	fs.StringVar(&o.FulcioURL, "fulcio-url", o.FulcioURL, "Fulcio URL (keyless)")
	fs.StringVar(&o.RekorURL, "rekor-url", o.RekorURL, `Rekor URL (keyless); "" skips the transparency log`)
	fs.StringVar(&o.IDTokenPath, "identity-token-path", o.IDTokenPath, "OIDC token file (keyless)")
	base.StringVar(fs, env, &o.RunID, "run-id", base.EnvRunID, "id of this run (PipelineRun name), recorded in the provenance")
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
