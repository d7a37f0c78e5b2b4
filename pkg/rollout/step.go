package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
)

// StepOptions are the flags of `kiln-steps rollout`.
type StepOptions struct {
	step.Options
	Kube     kube.KubeOptions
	Registry registry.RegistryOptions

	Image          string
	MaxUnavailable string
	Canary         int
	Timeout        time.Duration
	SettleTimeout  time.Duration
	// PolicyKey is the cosign public key the policy requires.
	PolicyKey string
	// DriftGate is enforce, warn or off (drift.go); default
	// DefaultDriftGate, "" means the default.
	DriftGate string
}

// Defaults of rollout's waits.
const (
	DefaultTimeout       = time.Hour
	DefaultSettleTimeout = 30 * time.Minute
)

// DefaultStepOptions returns rollout's options with their defaults. The
// policy key is kiln's public key, the same default as verify's.
func DefaultStepOptions() *StepOptions {
	return &StepOptions{
		Options: step.DefaultOptions(), Kube: kube.DefaultKubeOptions(),
		Timeout: DefaultTimeout, SettleTimeout: DefaultSettleTimeout, PolicyKey: step.DefaultPublicKey,
		DriftGate: DefaultDriftGate,
	}
}

// Validate reports every bad flag at once; it runs before the registry
// or the cluster is asked anything.
func (o *StepOptions) Validate() error {
	errs := []error{o.Options.Validate(), o.Kube.Validate(), imageref.RequireDigestRef("image", o.Image)}
	if o.Canary < 0 {
		errs = append(errs, fmt.Errorf("--canary %d: want 0 or more nodes", o.Canary))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: want a positive duration", o.Timeout))
	}
	if o.SettleTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--settle-timeout %s: want a positive duration", o.SettleTimeout))
	}
	if o.MaxUnavailable != "" {
		mu := intstr.Parse(o.MaxUnavailable)
		if _, err := intstr.GetScaledValueFromIntOrPercent(&mu, 100, true); err != nil || (mu.Type == intstr.Int && mu.IntVal < 1) {
			errs = append(errs, fmt.Errorf("--max-unavailable %q: want a node count of 1 or more, or a percent", o.MaxUnavailable))
		}
	}
	if o.DriftGate != "" {
		if err := ValidDriftGate(o.DriftGate); err != nil {
			errs = append(errs, fmt.Errorf("--drift-gate: %w", err))
		}
	}
	return exitcode.ValidationErrors(errs...)
}

// Run verifies the image and rolls it out: to the cluster, or with
// --source dir:PATH as a manifest in the work folder (the GitOps change).
// Both take one path, rollout.Run over the Source's client; a folder sets
// Config.NoController, the one difference.
func (o *StepOptions) Run(ctx context.Context, s step.Streams) error {
	if err := o.Validate(); err != nil {
		return err
	}
	// The registries folder is read before anything else can fail.
	r, err := registry.RemoteFrom(o.Registry)
	if err != nil {
		return err
	}
	out, err := o.Workspace().Ensure(work.StageRollout)
	if err != nil {
		return err
	}
	v := PolicyVerifier{Remote: r, RegistriesDir: o.Registry.ConfigDir, KeyPath: o.PolicyKey, OutDir: filepath.Join(out, "policy")}
	var res Result
	if err = checkAgreement(o.Workspace(), o.Pool, o.Image); err != nil {
		res = Result{State: StateRefused}
	} else if _, kerr := sign.LoadVerifier(o.PolicyKey); kerr != nil {
		// Without the key the policy check cannot run: a bad
		// --public-key (exit 2), not a refused image.
		res, err = Result{State: StateRefused}, exitcode.UsageErrorf("--public-key %s: %w", o.PolicyKey, kerr)
	} else {
		res, err = o.rollout(ctx, s, v, out)
	}
	if werr := o.report(out, res); werr != nil && err == nil {
		err = werr
	}
	switch {
	case err == nil:
	case res.State == StateRolledBack:
		err = exitcode.RolledBack(err)
	case res.State == StateDriftDetected:
		// Only a clean stop: when taking kiln's MachineConfig back failed
		// (RollbackFailed) the pool needs a person, exit 1.
		err = exitcode.Drift(err)
	}
	return err
}

// rollout runs Run over the client of --source: the cluster, or a folder
// whose one write, kiln's MachineConfig, lands in out.
func (o *StepOptions) rollout(ctx context.Context, s step.Streams, v Verifier, out string) (Result, error) {
	src, err := kube.SourceOf(&o.Kube, folder(out, o.Pool))
	if err != nil {
		return Result{State: StateRefused}, err
	}
	c, err := kube.New(src)
	if err != nil {
		return Result{State: StateRefused}, err
	}
	rc := Config{Client: c, Pool: o.Pool, Image: o.Image, Canary: o.Canary, Timeout: o.Timeout,
		SettleTimeout: o.SettleTimeout, Verifier: v, Out: s.Out, DriftGate: o.DriftGate,
		NoController: src.Folder != nil}
	if rc.DriftGate == "" {
		rc.DriftGate = DefaultDriftGate
	}
	if rc.DriftGate != DriftGateOff && !rc.NoController {
		if rc.Prediction, err = o.predict(ctx); err != nil {
			return Result{State: StateRefused}, err
		}
	}
	if o.MaxUnavailable != "" {
		mu := intstr.Parse(o.MaxUnavailable)
		rc.MaxUnavailable = &mu
	}
	return Run(ctx, rc)
}

// report writes the timeline and the results.
func (o *StepOptions) report(out string, res Result) error {
	tl := res.Timeline
	if tl == nil {
		tl = []work.Event{}
	}
	b, err := json.MarshalIndent(tl, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, work.TimelineFile), b, 0o644); err != nil {
		return fmt.Errorf("writing timeline: %w", err)
	}
	r := o.Results()
	if res.State == "" {
		res.State = "Failed"
	}
	if err := r.Set("ROLLOUT_STATE", res.State); err != nil {
		return err
	}
	if err := r.Set("UPDATED_NODES", strconv.Itoa(res.UpdatedNodes)); err != nil {
		return err
	}
	gate := res.Gate
	if gate == "" { // refused or failed before the gate
		gate = GateSkipped
	}
	if err := r.Set("DRIFT_GATE", gate); err != nil {
		return err
	}
	if err := writeDrift(out, res.Drift); err != nil {
		return err
	}
	return r.Write()
}

// PolicyVerifier is the check CRI-O makes on the node, run before any
// write: pkg/signing's containers/image policy with a sigstoreSigned
// requirement for the image's repository.
type PolicyVerifier struct {
	Remote registry.Remote
	// RegistriesDir is the registries folder Remote.Config was read from,
	// for containers/image (registry.RegistryOptions.ConfigDir).
	RegistriesDir string
	KeyPath       string
	OutDir        string
}

// Verify evaluates the policy for image and requires an attestation, from
// the policy's key, that the image passed the node import check.
func (p PolicyVerifier) Verify(ctx context.Context, image string) error {
	ref, err := p.Remote.ParseRef(image)
	if err != nil {
		return err
	}
	_, err = sign.VerifyPolicy(ctx, sign.PolicyInput{
		Image: image, KeyPath: p.KeyPath, AuthFile: p.Remote.AuthFile, RegistriesDir: p.RegistriesDir,
		Insecure: slices.Contains(p.Remote.Insecure, ref.Context().RegistryStr()), OutDir: p.OutDir,
	})
	if err != nil {
		return err
	}
	// A node reboots into the image: it must have passed the node import
	// check, as attested from the same key.
	v, err := sign.LoadVerifier(p.KeyPath)
	if err != nil {
		return err
	}
	return sign.RequireNodeLint(ctx, p.Remote, image, v)
}
