package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/reproduce"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

func newReproduceCommand(env base.LookupEnv) *cobra.Command {
	o := reproduce.DefaultOptions()
	format := step.FormatText
	c := base.NewStage(base.Stage{
		Name:  reproduce.Stage,
		Short: "Rebuild an image from its kiln attestation and compare the digests",
		Long: `Verifies kiln's attestation on IMAGE@DIGEST (a node image, a kmod-build or a kmod-sign image)
with kiln's identity (--public-key, or keyless --certificate-identity/-oidc-issuer/-roots), then
rebuilds the image from exactly the inputs it records, in a fresh temporary folder with its own
buildah storage (removed at the end), pushing nothing. A node image's rendered config is read
from the image (/etc/machine-config-daemon/currentconfig) or --rendered-config, and used only
when its hash is the attested one. A kmod-sign image's module signatures are checked and transplanted
onto the attested unsigned image: no private key is needed. With --deep the kiln images it was
built on (a node image's kmod base, a signed image's unsigned one) are reproduced too.

Prints "identical IMAGE@DIGEST" per reproduced image, or the differing layers (index, digest,
size), their files (path, size, sha256, mode, mtime, uid:gid on both sides) and config fields
(labels, env, history). No attestation from the identity: exit 3. A rebuild with another
digest: exit 7.

With -o json stdout holds the comparison as JSON (the --report-file document) and the text goes
to stderr. --output FILE, --output's meaning before it chose a format, still writes the JSON to
FILE for one release (a value other than text or json), with a warning: use --report-file.

Reads:   the image, its signature and attestation, the attested inputs (registry); --rendered-config
Writes:  --report-file (the comparison as JSON); nothing to any registry
Results: REPRODUCED (true or false), DIFF (a one-line summary), with --results-dir`,
		Example: `  kiln-steps reproduce registry.example.com/os@sha256:<64 hex> --public-key keys/cosign.pub

  # the image a node runs (its MachineConfigNode names its rendered config, whose
  # osImageURL is kiln's image), the full comparison as JSON
  rendered="$(oc get machineconfignode n1 -o jsonpath='{.status.configVersion.current}')"
  kiln-steps reproduce "$(oc get mc "$rendered" -o jsonpath='{.spec.osImageURL}')" \
    --public-key keys/cosign.pub --report-file diff.json`,
		Runner: o,
		Bind: func(fs *pflag.FlagSet) {
			fs.StringVar(&o.Image, "image", o.Image, "image to reproduce, repository@sha256:<64 hex> (or the one argument)")
			base.StringVar(fs, env, &o.ResultsDir, "results-dir", base.EnvResultsDir, `folder the Tekton results are written to; "" writes none`)
			base.BindRegistry(fs, env, &o.RegistryOptions)
			base.BindIdentity(fs, &o.IdentityOptions)
			fs.StringVar(&o.Buildah, "buildah", o.Buildah, "buildah binary (buildah-path node images and kmod builds)")
			fs.StringVar(&o.SecretsDir, "build-secrets-dir", o.SecretsDir, "kmod build secrets, one file or folder per secret id, as kmod-build's (kiln attests their names, not their content)")
			deprecatedAlias(fs, "secrets-dir", "build-secrets-dir")
			fs.StringVar(&o.RenderedConfig, "rendered-config", o.RenderedConfig, "rendered MachineConfig file (render's work/render/rendered.json, say); default: the image's own copy")
			fs.StringVar(&o.ReportFile, "report-file", o.ReportFile, "write the comparison as JSON to this file")
			fs.BoolVar(&o.Deep, "deep", o.Deep, "also reproduce the kiln images it was built on (kmod base, unsigned kmod image)")
			base.BindFormat(fs, &format)
			fs.Lookup("output").Usage += "; any other value is a file, the old meaning of --output (deprecated: use --report-file)"
		},
		Format: &format,
		Check:  func(c *cobra.Command) error { return oldReportFile(c, &format, &o.ReportFile) },
		Args: func(args []string) {
			if len(args) == 1 && o.Image == "" {
				o.Image = args[0]
			}
		},
	})
	c.Use = reproduce.Stage + " [flags] [IMAGE@DIGEST]"
	// One image: the argument or --image, not both.
	c.Args = func(c *cobra.Command, args []string) error {
		if err := cobra.MaximumNArgs(1)(c, args); err != nil {
			return err
		}
		if len(args) == 1 && c.Flags().Changed("image") {
			return errImageTwice
		}
		return nil
	}
	return c
}

var errImageTwice = errors.New("give the image as the argument or as --image, not both")

// oldReportFile keeps reproduce's old --output FILE working for one
// release: a value that is not a format is the report file, with a
// warning naming --report-file.
func oldReportFile(c *cobra.Command, format, reportFile *string) error {
	if *format == step.FormatText || *format == step.FormatJSON || *format == "" {
		return nil // "" is refused by Validate as a format
	}
	if c.Flags().Changed("report-file") {
		return fmt.Errorf("--output %q: not a format (text or json); a file is given with --report-file, which is set", *format)
	}
	fmt.Fprintf(c.ErrOrStderr(), "%s: --output FILE is deprecated, use --report-file %s (--output now takes text or json)\n",
		c.CommandPath(), termsafe.Escape(*format))
	*reportFile, *format = *format, step.FormatText
	return nil
}
