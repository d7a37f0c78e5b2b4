package bootimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/kiln-dev/kiln/pkg/work"
)

// Reconciler runs one pass of the boot image controller over a Cluster.
type Reconciler struct {
	Cluster Cluster
	// Namespace holds the MachineSets (openshift-machine-api).
	Namespace string
	// DefaultArch is the stream architecture of MachineSets without the
	// autoscaler annotation on a single-arch cluster. MCO uses the control
	// plane's; kiln runs anywhere, so it is a flag defaulting to its own.
	DefaultArch string
	// DefaultOptIn overrides the platform default when the admin has no
	// opinion (nil: SupportFor's DefaultOn).
	DefaultOptIn *bool
	// StableTimeout bounds the wait for a stable cluster; StablePoll is the
	// interval between checks.
	StableTimeout, StablePoll time.Duration
	// VSphereTemplates is the release → template mapping (may be nil).
	VSphereTemplates map[string]string
	// CAPI opts Cluster API MachineSets in (zero value: none).
	CAPI CAPIOptIn
	// Log receives one line per event (never user-data).
	Log io.Writer
	// SkewLimits are the oldest acceptable boot images (zero: defaults).
	SkewLimits SkewLimits
	// NoHistory turns BootImageHistory records off.
	NoHistory bool
	// Now stamps annotations; time.Now when nil.
	Now func() time.Time
}

// Report (bootimages/report.json, which the report stage reads) and
// Outcome are records of the work workspace; aliases keep this package's
// code unchanged.
type (
	Report  = work.BootImageReport
	Outcome = work.Outcome
)

// pass is the state of one Run.
type pass struct {
	*Reconciler
	report  *Report
	infra   *configv1.Infrastructure
	cv      *configv1.ClusterVersion
	updater Updater
	stream  *Stream
	// streamErr is why the stream could not be parsed; as in MCO, it fails
	// each MachineSet that needs the stream, not the pass.
	streamErr error
	// stable is checked once, when the first MachineSet reaches that guard.
	stableChecked bool
	// progress is the Progressing status not yet written: it is written
	// before the pass's first change to a MachineSet or Secret, so a pass
	// that changes nothing writes no status it then takes back.
	progress *status
	// stubsCurrent are the user-data Secrets already found (or made)
	// current in this pass: MachineSets share them, so each is read once.
	stubsCurrent map[SecretRef]bool
}

// Run reconciles every enrolled MachineSet once. It returns the report and
// an error when any MachineSet failed or a cluster-wide check failed; the
// BootImageUpdateDegraded condition says the same on MachineConfiguration.
func (r *Reconciler) Run(ctx context.Context) (*Report, error) {
	p := &pass{Reconciler: r, report: &Report{Patched: []Outcome{}, UpToDate: []string{}, Skipped: []Outcome{}, Errors: []Outcome{}, StubsUpgraded: []string{}}}
	mc, err := r.Cluster.MachineConfiguration(ctx)
	if err != nil {
		return p.report, fmt.Errorf("reading opt-in: %w", err)
	}
	p.report.SkewEnforcement = skewMode(mc)
	st := newStatus(mc)
	clusterErr := p.run(ctx, mc, st)
	st.finish(p.report, clusterErr)
	err = errors.Join(clusterErr, failures(p.report))
	p.skew(mc, st, err != nil)
	if serr := p.writeStatus(ctx, st); serr != nil {
		err = errors.Join(err, serr)
	}
	return p.report, err
}

func (p *pass) run(ctx context.Context, mc *operatorv1.MachineConfiguration, st *status) error {
	var err error
	if p.infra, err = p.Cluster.Infrastructure(ctx); err != nil {
		return fmt.Errorf("reading platform: %w", err)
	}
	platform := platformOf(p.infra)
	p.report.Platform = string(platform)
	support := SupportFor(p.infra)
	defaultOn := support.Supported && support.DefaultOn
	if p.DefaultOptIn != nil {
		defaultOn = support.Supported && *p.DefaultOptIn
	}
	st.managed = EffectiveManagedBootImages(mc.Spec.ManagedBootImages, mc.Status.ManagedBootImagesStatus, defaultOn)
	sel, err := Enrollment(st.managed, operatorv1.MachineSets, operatorv1.MachineAPI)
	if err != nil {
		return err
	}
	var sets []machinev1beta1.MachineSet
	if sel != nil {
		if sets, err = p.Cluster.MachineSets(ctx, p.Namespace, sel); err != nil {
			return err
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	p.report.Enrolled = len(sets)
	st.total = len(sets)
	p.logf("platform %s: %d MachineSets enrolled", platform, len(sets))
	if len(sets) > 0 {
		if err := p.machineAPI(ctx, sets, support, platform, st); err != nil {
			return err
		}
	}
	return p.clusterAPI(ctx)
}

// failures summarises the MachineSets that failed, nil when none did.
func failures(r *Report) error {
	var errs []error
	if n := len(r.Errors); n > 0 {
		errs = append(errs, fmt.Errorf("%d of %d MachineSets failed: %s", n, r.Enrolled, r.Errors[0].Reason))
	}
	if c := r.CAPI; c != nil && len(c.Errors) > 0 {
		errs = append(errs, fmt.Errorf("%d of %d Cluster API MachineSets failed: %s", len(c.Errors), c.Enrolled, c.Errors[0].Reason))
	}
	return errors.Join(errs...)
}

// machineAPI reconciles the enrolled Machine API MachineSets. Per-MachineSet
// failures are recorded in the report; a returned error stops the pass.
func (p *pass) machineAPI(ctx context.Context, sets []machinev1beta1.MachineSet, support PlatformSupport, platform configv1.PlatformType, st *status) error {
	p.progress = st.progressing()
	if p.updater, _ = UpdaterFor(platform); support.Supported && p.updater == nil {
		return fmt.Errorf("platform %s: no updater", platform)
	} else if !support.Supported {
		p.updater = nil
	}
	if err := p.prerequisites(ctx); err != nil {
		return err
	}
	for i := range sets {
		if err := p.one(ctx, &sets[i]); err != nil {
			var fatal *clusterError
			if errors.As(err, &fatal) {
				return fatal.err
			}
			p.report.Errors = append(p.report.Errors, Outcome{Name: sets[i].Name, Reason: err.Error()})
			p.logf("MachineSet %s: %v", sets[i].Name, err)
		}
	}
	return nil
}

// prerequisites checks, once, that the boot images ConfigMap exists and
// reads ClusterVersion: a missing ConfigMap is an error at once, not a wait.
func (p *pass) prerequisites(ctx context.Context) error {
	if p.cv != nil {
		return nil
	}
	if _, err := p.Cluster.ConfigMap(ctx, MCONamespace, BootImagesConfigMap); err != nil {
		return fmt.Errorf("reading boot images: %w", err)
	}
	var err error
	if p.cv, err = p.Cluster.ClusterVersion(ctx); err != nil {
		return fmt.Errorf("reading cluster version: %w", err)
	}
	return nil
}

// startProgress writes the pending Progressing status once, before the
// pass's first write. MCO writes it at the start of every sync; deferring
// it keeps a pass with nothing to patch from writing Progressing=True and
// then False again (two status writes, two watch events for nothing).
func (p *pass) startProgress(ctx context.Context) error {
	if p.progress == nil {
		return nil
	}
	st := p.progress
	p.progress = nil
	return p.writeStatus(ctx, st)
}

// skew evaluates skew enforcement and adds its condition and record to st.
func (p *pass) skew(mc *operatorv1.MachineConfiguration, st *status, failed bool) {
	limits := p.SkewLimits
	if limits == (SkewLimits{}) {
		limits = DefaultSkewLimits
	}
	release := ""
	if p.stream != nil {
		release = p.stream.ReleaseVersion
	}
	s := evaluateSkew(mc, p.report, failed, release, p.cv, limits)
	if s.Mode == "" {
		return
	}
	p.report.Skew = &s
	st.automatic = s.Automatic
	if c := upgradeableCondition(s); c != nil {
		st.conditions = append(st.conditions, *c)
	}
}

// clusterError stops the whole pass: nothing after it may be patched.
type clusterError struct{ err error }

func (e *clusterError) Error() string { return e.err.Error() }

// one reconciles a MachineSet, re-reading it and deciding again when the
// patch meets a conflict.
func (p *pass) one(ctx context.Context, ms *machinev1beta1.MachineSet) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := p.Cluster.MachineSet(ctx, ms.Namespace, ms.Name)
			if err != nil {
				return err
			}
			ms = fresh
		}
		first = false
		return p.decideAndPatch(ctx, ms)
	})
}

// guards runs the guards shared by Machine API and Cluster API
// MachineSets, in the order the issue gives: ownerReference, osstream and
// Windows labels, a stable cluster, architecture. It returns the
// architecture, or the reason to skip.
func (p *pass) guards(ctx context.Context, ms metav1.Object, templateLabels map[string]string) (arch, skip string, err error) {
	if r := ownershipGuard(ms); r != "" {
		return "", r, nil
	}
	if r := osGuardLabels(ms.GetLabels(), templateLabels); r != "" {
		return "", r, nil
	}
	if err := p.ensureStable(ctx); err != nil {
		return "", "", &clusterError{err}
	}
	return archOf(ms, p.cv, p.DefaultArch)
}

// errOrSkip returns err, or records the skip.
func errOrSkip(err error, reason string, skip func(string) error) error {
	if err != nil {
		return err
	}
	return skip(reason)
}

func (p *pass) decideAndPatch(ctx context.Context, ms *machinev1beta1.MachineSet) error {
	skip := func(reason string) error {
		p.report.Skipped = append(p.report.Skipped, Outcome{Name: ms.Name, Reason: reason})
		p.logf("MachineSet %s: skipped: %s", ms.Name, reason)
		return nil
	}
	arch, reason, err := p.guards(ctx, ms, ms.Spec.Template.Labels)
	if err != nil || reason != "" {
		return errOrSkip(err, reason, skip)
	}
	if p.updater == nil {
		return skip(ReasonPlatformNotSupported)
	}
	if r := providerKindGuard(ms, platformOf(p.infra)); r != "" {
		return skip(r)
	}
	// MCO decodes the stream for each MachineSet it reconciles
	// (platform_helpers.go reconcilePlatform), so a bad stream fails the
	// MachineSets that need it and nothing else.
	if p.streamErr != nil {
		return p.streamErr
	}
	plan, err := p.updater.Plan(Input{MachineSet: ms, Arch: arch, Stream: p.stream, Infra: p.infra, VSphereTemplates: p.VSphereTemplates})
	if err != nil {
		return err
	}
	if plan.Skip != "" {
		return skip(plan.Skip)
	}
	if len(plan.Edits) == 0 {
		p.report.UpToDate = append(p.report.UpToDate, ms.Name)
		return nil
	}
	patch, err := p.buildPatch(ms, plan)
	if err != nil {
		return err
	}
	if err := p.startProgress(ctx); err != nil {
		return &clusterError{err}
	}
	if err := p.upgradeStub(ctx, ms, plan.UserDataSecret); err != nil {
		return err
	}
	if err := p.Cluster.PatchMachineSet(ctx, ms, patch); err != nil {
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("patching MachineSet %s/%s: %w", ms.Namespace, ms.Name, err)
	}
	p.report.Patched = append(p.report.Patched, Outcome{Name: ms.Name, From: plan.Current, To: plan.Target})
	if !p.NoHistory {
		if err := p.recordHistory(ctx, ms, plan); err != nil {
			return err
		}
	}
	p.logf("MachineSet %s: boot image %s → %s", ms.Name, plan.Current, plan.Target)
	return nil
}

// buildPatch returns the minimal JSON merge patch: the changed providerSpec
// fields, the hot-loop record, and metadata.resourceVersion so that a
// concurrent writer makes the patch fail with a conflict instead of being
// overwritten (merge patches replace whole arrays, e.g. GCP disks).
func (p *pass) buildPatch(ms *machinev1beta1.MachineSet, plan Plan) ([]byte, error) {
	name := ms.Namespace + "/" + ms.Name
	next, err := plan.Spec.Apply(plan.Edits)
	if err != nil {
		return nil, fmt.Errorf("MachineSet %s: %w", name, err)
	}
	hot, err := hotLoopCheck(ms, next)
	if err != nil {
		return nil, err
	}
	specPatch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(plan.Spec.Raw, next, plan.Spec.Raw)
	if err != nil {
		return nil, fmt.Errorf("MachineSet %s: computing providerSpec patch: %w", name, err)
	}
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": ms.ResourceVersion,
			"annotations":     map[string]string{HotLoopAnnotation: hot},
		},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"providerSpec": map[string]any{"value": json.RawMessage(specPatch)},
		}}},
	})
}

// ensureStable waits, at most StableTimeout, until the cluster is stable
// as MCO decides it (stable), then parses the stream. MCO skips the whole
// sync while the cluster is unstable and runs again on the ClusterVersion
// event that makes it stable (boot_image_controller.go syncAll and
// updateClusterVersion); a one-shot stage has no next event, so it waits,
// and a timeout is an error: nothing is patched. A stream that cannot be
// parsed is kept as streamErr for the MachineSets that need it.
func (p *pass) ensureStable(ctx context.Context) error {
	if p.stableChecked {
		return nil
	}
	var cm *corev1.ConfigMap
	var why string
	check := func(ctx context.Context) (bool, error) {
		var err error
		cm, err = p.Cluster.ConfigMap(ctx, MCONamespace, BootImagesConfigMap)
		if err == nil {
			p.cv, err = p.Cluster.ClusterVersion(ctx)
		}
		var missing *NotFoundError
		switch {
		case errors.As(err, &missing):
			return false, fmt.Errorf("reading boot images: %w", err)
		case err != nil: // transient: keep polling; a real reason wins on timeout
			if why == "" {
				why = err.Error()
			}
			return false, nil
		}
		ok, reason := stable(cm, p.cv)
		why = reason
		return ok, nil
	}
	interval := p.StablePoll
	if interval <= 0 {
		interval = 5 * time.Second
	}
	timeout := p.StableTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, check)
	if err != nil {
		if why != "" && wait.Interrupted(err) {
			return fmt.Errorf("waiting %s for a stable cluster: %s", timeout, why)
		}
		return err
	}
	p.stableChecked = true
	if p.stream, p.streamErr = ParseStream(cm); p.streamErr == nil {
		p.report.ReleaseVersion = p.stream.ReleaseVersion
	}
	return nil
}

// stable reports whether boot images may be updated, and why not, by MCO's
// rule (pkg/controller/bootimage/helpers.go isClusterStable): the newest
// ClusterVersion history entry exists and is Completed. An empty history
// (installing) and a Partial newest entry (upgrading) defer, whatever the
// coreos-bootimages ConfigMap's MCOReleaseImageVersion stamp says; the
// stamp is only quoted in the reason.
func stable(cm *corev1.ConfigMap, cv *configv1.ClusterVersion) (bool, string) {
	h := cv.Status.History
	if len(h) > 0 && h[0].State == configv1.CompletedUpdate {
		return true, ""
	}
	state := "has no history (installing)"
	if len(h) > 0 {
		state = fmt.Sprintf("history[0] %s is %s", h[0].Version, h[0].State)
	}
	return false, fmt.Sprintf("ClusterVersion/version (desired %q) %s; boot images wait for a Completed update, whatever ConfigMap %s/%s %s=%q says",
		cv.Status.Desired.Version, state, MCONamespace, BootImagesConfigMap, MCOReleaseVersionKey, cm.Data[MCOReleaseVersionKey])
}

func (p *pass) logf(format string, args ...any) {
	if p.Log != nil {
		fmt.Fprintf(p.Log, format+"\n", args...)
	}
}

func (p *pass) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}
