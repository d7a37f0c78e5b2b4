package reproduce

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Stage is the subcommand's name, also its progress prefix.
const Stage = "reproduce"

// Options are the flags of `kiln-steps reproduce`.
type Options struct {
	registry.RegistryOptions
	// IdentityOptions name the signer whose attestation is the list of
	// inputs: only an image kiln's identity attested is rebuilt.
	step.IdentityOptions
	// Image is the image under check, repository@sha256:….
	Image string
	// ResultsDir receives REPRODUCED and DIFF; "" writes no results (a
	// user's shell rather than a Task).
	ResultsDir string
	// Buildah is the buildah binary (the buildah path and kmod builds).
	Buildah string
	// BuildahEnv is buildah's environment; nil means the process's. Its
	// storage is always a fresh one under the rebuild's folder.
	BuildahEnv []string
	// SecretsDir holds the kmod build's secrets, one entry per secret id:
	// kiln attests their names, never their content.
	SecretsDir string
	// RenderedConfig is a file with the rendered MachineConfig; "" reads
	// it from the image itself. Either way its hash must be the attested one.
	RenderedConfig string
	// ReportFile, when set, receives the report as JSON.
	ReportFile string
	// Deep also reproduces the kiln images the image was built from: the
	// kmod image under a node image, the unsigned image under a signed
	// kmod image. Without it those are taken as their digests say.
	Deep bool

	report *Report
}

// Result returns the last Run's report, or nil when it compared nothing
// (cmd/cli prints it with -o json).
func (o *Options) Result() any {
	if o.report == nil {
		return nil
	}
	return o.report
}

// DefaultOptions returns reproduce's options with their defaults. Deep
// is on: "identical" then covers the whole chain down to the payload's
// images (which the threat model trusts), not only the top layers; a
// node image's modules are the part of it most worth rebuilding.
func DefaultOptions() *Options {
	return &Options{IdentityOptions: step.DefaultIdentityOptions(), Buildah: buildah.DefaultBuildah, Deep: true}
}

// Validate reports every bad flag at once, before any file or registry
// is read: a tag is refused, since only a digest names what was attested.
func (o *Options) Validate() error {
	var out error
	if o.ReportFile != "" && filepath.Base(o.ReportFile) == "." {
		out = fmt.Errorf("--report-file %q: want a file", o.ReportFile)
	}
	return exitcode.ValidationErrors(imageref.RequireDigestRef("image", o.Image), o.IdentityOptions.Validate(),
		exitcode.Required("buildah", o.Buildah), out)
}

// Run verifies, rebuilds and compares; it returns a NotReproducible
// error (exit 7) when any image differs from its rebuild.
func (o *Options) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	id, err := o.Files().Load()
	if err != nil {
		return err
	}
	if id.IsZero() {
		// Nothing was checked, so nothing was refused: the command line
		// names no identity to check with (a usage error, exit 2).
		return &exitcode.UsageError{Err: fmt.Errorf("reproducing %s: %w (--public-key %s does not exist and no keyless identity is given): the attestation names the inputs, so it must be verified first", o.Image, trust.ErrNoIdentity, o.PublicKey)}
	}
	r, err := registry.RemoteFrom(o.RegistryOptions)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "kiln-reproduce-")
	if err != nil {
		return fmt.Errorf("creating the rebuild's folder: %w", err)
	}
	// The builders' rebuild API puts buildah's storage in a fresh folder
	// under work and empties it again (buildah.Buildah.FreshStorage), so
	// no layer cached by an earlier build can stand in for a rebuilt one.
	defer func() {
		if err := os.RemoveAll(work); err != nil {
			fmt.Fprintf(s.Err, "%s: removing the rebuild's folder %s: %v\n", Stage, work, err)
		}
	}()
	bb := buildah.Buildah{Bin: o.Buildah, Env: o.BuildahEnv}
	rp := &reproducer{o: o, r: r, id: id, bb: bb, work: work, p: step.NewProgress(s.Err, Stage), done: map[string]bool{}}
	runErr := rp.reproduce(ctx, o.Image)
	o.report = &rp.report
	rp.report.WriteText(s.Out)
	if err := o.write(&rp.report, runErr); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if !rp.report.Reproduced {
		return exitcode.NotReproducible(fmt.Errorf("%s is not reproducible: %s", o.Image, rp.report.Summary(400)))
	}
	return nil
}

// write saves the JSON report and the results. A run that failed before
// comparing anything writes REPRODUCED=false and the error as DIFF.
func (o *Options) write(rep *Report, runErr error) error {
	if o.ReportFile != "" {
		if err := os.WriteFile(o.ReportFile, rep.JSON(), 0o644); err != nil {
			return fmt.Errorf("writing --report-file: %w", err)
		}
	}
	if o.ResultsDir == "" {
		return nil
	}
	res := taskresult.NewResults(o.ResultsDir)
	summary := rep.Summary(maxDiffResult)
	if runErr != nil {
		summary = clip(runErr.Error(), maxDiffResult)
	}
	if err := res.Set("REPRODUCED", fmt.Sprint(runErr == nil && rep.Reproduced)); err != nil {
		return err
	}
	if err := res.Set("DIFF", summary); err != nil {
		return err
	}
	return res.Write()
}

// maxDiffResult keeps DIFF well inside the step's 4096-byte result budget.
const maxDiffResult = 2048
