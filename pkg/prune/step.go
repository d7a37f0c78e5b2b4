package prune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/retention"
	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
)

// Stage is the step's name and its folder in the work workspace.
const Stage = "prune"

// Tekton results of the step.
const (
	ResultDeleted    = "DELETED"
	ResultFreedBytes = "FREED_BYTES"
)

// Options are the flags of `kiln-steps prune`.
type Options struct {
	step.Options
	Kube     kube.KubeOptions
	Registry registry.RegistryOptions

	// PublicKey is kiln's cosign public key: only images whose signature
	// and attestation verify with it are kiln's.
	PublicKey string
	// Repositories are kiln's repositories; nothing elsewhere is deleted.
	Repositories []string
	// KeepPerPool is how many recent rendered configs' images each pool keeps.
	KeepPerPool int
	// LiveImages are the images of runs in progress or queued.
	LiveImages []string
	// Apply deletes; without it the plan is only printed.
	Apply bool

	report *Report
}

// Report is the step's result: the plan, and what was done when applied.
type Report struct {
	Applied bool     `json:"applied"`
	Plan    *Plan    `json:"plan"`
	Outcome *Outcome `json:"outcome,omitempty"`
}

// DefaultOptions returns prune's options with their defaults: a dry run
// keeping the last retention.DefaultPerPool images of each pool.
func DefaultOptions() *Options {
	return &Options{Options: step.DefaultOptions(), Kube: kube.DefaultKubeOptions(),
		PublicKey: step.DefaultPublicKey, KeepPerPool: retention.DefaultPerPool}
}

// Validate reports every bad flag at once, before any I/O.
func (o *Options) Validate() error {
	errs := []error{o.ValidateFolders(), exitcode.Required("public-key", o.PublicKey)}
	if dir, _ := o.Kube.SourceDir(); dir != "" || o.Kube.Validate() != nil {
		errs = append(errs, fmt.Errorf("--source %q: prune reads the live cluster; a folder of manifests cannot say what nodes run", o.Kube.Source))
	}
	if len(o.Repositories) == 0 {
		errs = append(errs, errors.New("--repository is required: kiln's repositories, the only ones prune deletes from"))
	}
	for _, r := range o.Repositories {
		if _, err := name.NewRepository(r, name.StrictValidation); err != nil {
			errs = append(errs, fmt.Errorf("--repository %q: %w", r, err))
		}
	}
	if o.KeepPerPool < 0 {
		errs = append(errs, fmt.Errorf("--keep-per-pool %d: want 0 or more images", o.KeepPerPool))
	}
	for _, img := range o.LiveImages {
		if _, err := name.ParseReference(img); err != nil {
			errs = append(errs, fmt.Errorf("--live-image %q: %w", img, err))
		}
	}
	return exitcode.ValidationErrors(errs...)
}

// Result is the last Run's report, nil before a plan was made.
func (o *Options) Result() any {
	if o.report == nil {
		return nil
	}
	return o.report
}

// Run plans the prune, prints it, and with --apply deletes.
func (o *Options) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	r, err := registry.RemoteFrom(o.Registry)
	if err != nil {
		return err
	}
	v, err := sign.LoadVerifier(o.PublicKey)
	if err != nil {
		return exitcode.UsageErrorf("--public-key %s: %w", o.PublicKey, err)
	}
	c, err := kube.Client(&o.Kube)
	if err != nil {
		return err
	}
	cfg := Config{Remote: r.WithSession(), Verifier: v, Repos: o.Repositories, PerPool: o.KeepPerPool,
		Live: o.LiveImages, Cluster: ReadCluster(c), Log: s.Out}
	p, err := MakePlan(ctx, cfg)
	if err != nil {
		return err
	}
	o.report = &Report{Plan: p}
	PrintPlan(s.Out, p)
	if o.Apply {
		o.report.Applied = true
		o.report.Outcome, err = Apply(ctx, cfg, p)
		if o.report.Outcome != nil {
			PrintOutcome(s.Out, o.report.Outcome)
		}
	}
	if werr := o.write(); werr != nil && err == nil {
		err = werr
	}
	return err
}

// write records the report in work/prune/report.json and the results.
func (o *Options) write() error {
	dir, err := o.Workspace().Ensure(Stage)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(o.report, "", "  ")
	if err != nil {
		return err
	}
	if err := safepath.WriteFile(dir, "report.json", append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the prune report: %w", err)
	}
	deleted := 0
	if o.report.Outcome != nil {
		deleted = len(o.report.Outcome.Deleted)
	}
	res := o.Results()
	if err := res.Set(ResultDeleted, strconv.Itoa(deleted)); err != nil {
		return err
	}
	if err := res.Set(ResultFreedBytes, strconv.FormatInt(o.report.Plan.FreedBytes, 10)); err != nil {
		return err
	}
	return res.Write()
}
