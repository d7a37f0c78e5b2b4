package trigger

import (
	"context"
	"encoding/json"
	"fmt"

	configv1 "github.com/openshift/api/config/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
)

// Error carries the reason of a failed sub-step, as flux's reconcilers do;
// the reason is the event reason on the pool.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(reason string, err error) error { return &Error{Reason: reason, Err: err} }

// Reasons of pool events and errors.
const (
	ReasonConfig      = "InvalidConfig"
	ReasonInputs      = "InvalidInputs"
	ReasonCreated     = "RunCreated"
	ReasonQueued      = "RunQueued"
	ReasonStarted     = "RunStarted"
	ReasonCancelled   = "RunCancelled"
	ReasonWaitingWave = "WaitingForWave"
	ReasonReverted    = "Reverted"
	ReasonRevertWait  = "RevertWaiting"
	ReasonRuns        = "RunsFailed"
)

func selectorOf(p *mcfgv1.MachineConfigPool) (labels.Selector, error) {
	sel := p.Spec.MachineConfigSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return labels.Nothing(), nil
	}
	return metav1.LabelSelectorAsSelector(sel)
}

// world is what one reconcile reads, shared by its sub-steps.
type world struct {
	config   Config
	pipeline *pipelinev1.Pipeline
	tasks    []string
	version  string
	facts    payload.Facts
	cv       *configv1.ClusterVersion
	inputs   Inputs
	fp       Fingerprint
	boot     string // coreos-bootimages digest; empty without the ConfigMap
}

// loadConfig reads kiln-config and the node-image Pipeline it names.
func (c *Controller) loadConfig(ctx context.Context, w *world) error {
	var cm corev1.ConfigMap
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: ConfigName}, &cm)
	if apierrors.IsNotFound(err) {
		return fail(ReasonConfig, fmt.Errorf("ConfigMap %s/%s not found: the trigger makes no run without it", c.Namespace, ConfigName))
	}
	if err != nil {
		return err
	}
	if w.config, err = ParseConfig(&cm); err != nil {
		return fail(ReasonConfig, err)
	}
	w.pipeline, w.version, err = c.loadPipeline(ctx, w.config.Pipeline)
	if err != nil {
		return err
	}
	w.tasks = pipelineTasks(w.pipeline)
	return nil
}

func (c *Controller) loadPipeline(ctx context.Context, name string) (*pipelinev1.Pipeline, string, error) {
	var p pipelinev1.Pipeline
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, &p); err != nil {
		return nil, "", fail(ReasonConfig, fmt.Errorf("reading Pipeline %s/%s (ConfigMap %s): %w", c.Namespace, name, ConfigName, err))
	}
	v := p.Labels["app.kubernetes.io/version"]
	if v == "" {
		return nil, "", fail(ReasonConfig, fmt.Errorf("Pipeline %s/%s: metadata.labels[app.kubernetes.io/version] is empty: the fingerprint needs the pipeline's version", c.Namespace, name))
	}
	return &p, v, nil
}

// loadInputs gathers pool's inputs and computes its fingerprint.
func (c *Controller) loadInputs(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world) error {
	// Only the pool's MCs, found by index, and no deep copies: a cluster
	// holds thousands of MCs, this runs on every edit, and nothing here
	// mutates them.
	poolSel, err := selectorOf(pool)
	if err != nil {
		return fail(ReasonInputs, fmt.Errorf("MachineConfigPool %q: spec.machineConfigSelector: %w", pool.Name, err))
	}
	all, err := listMachineConfigs(ctx, c.Client, poolSel, c.mcIndexed)
	if err != nil {
		return err
	}
	if err := c.loadPayload(ctx, w); err != nil {
		return err
	}
	var mods kmmv1beta1.ModuleDay0List
	if err := c.Client.List(ctx, &mods, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	modules := make([]*kmmv1beta1.ModuleDay0, len(mods.Items))
	for i := range mods.Items {
		modules[i] = &mods.Items[i]
	}
	w.inputs, err = GatherInputs(ctx, pool, all, modules, w.facts, c.Resolve)
	if err != nil {
		return err
	}
	w.inputs.PipelineVersion = w.version
	w.fp, err = c.hasher.Compute(w.inputs)
	if err != nil {
		return fail(ReasonInputs, err)
	}
	return nil
}

// GatherInputs is what cluster and local mode share: from the objects
// read, one pool's inputs (PipelineVersion left to the caller).
func GatherInputs(ctx context.Context, pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig, mods []*kmmv1beta1.ModuleDay0,
	facts payload.Facts, resolve func(context.Context, string) (string, error)) (Inputs, error) {
	sel, err := mcrender.Select(pool, mcs)
	if err != nil {
		return Inputs{}, fail(ReasonInputs, err)
	}
	base, err := resolve(ctx, facts.BaseOSImage)
	if err != nil {
		return Inputs{}, fail(ReasonInputs, fmt.Errorf("ConfigMap %s/%s: baseOSContainerImage: %w", payload.Namespace, payload.OSImageURLMap, err))
	}
	ext := facts.ExtensionsImage
	if ext != "" {
		if ext, err = resolve(ctx, ext); err != nil {
			return Inputs{}, fail(ReasonInputs, fmt.Errorf("ConfigMap %s/%s: baseOSExtensionsContainerImage: %w", payload.Namespace, payload.OSImageURLMap, err))
		}
	}
	mod, err := (&mcrender.Objects{Modules: mods}).Module(pool)
	if err != nil {
		return Inputs{}, fail(ReasonInputs, err)
	}
	return Inputs{MachineConfigs: sel, BaseImage: base, ExtensionsImage: ext, ModuleDay0: mod, Rebuild: pool.Annotations[AnnotRebuild]}, nil
}

func (c *Controller) loadPayload(ctx context.Context, w *world) error {
	var cm corev1.ConfigMap
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, &cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	cmp := &cm
	if apierrors.IsNotFound(err) {
		cmp = nil
	}
	var cv configv1.ClusterVersion
	if err := c.Client.Get(ctx, client.ObjectKey{Name: payload.ClusterVersionName}, &cv); err == nil {
		w.cv = &cv
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if w.facts, err = payload.FromObjects(cmp, w.cv); err != nil {
		return fail(ReasonInputs, err)
	}
	return nil
}

// bootImagesDigest digests the boot image stream and the
// MachineConfiguration's managedBootImages: either changing means the
// MachineSets may need new boot images. Empty when there is no stream.
func (c *Controller) bootImagesDigest(ctx context.Context) (string, error) {
	var cm corev1.ConfigMap
	err := c.Client.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: BootImagesConfigMap}, &cm)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var mc operatorv1.MachineConfiguration
	if err := c.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, &mc); err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	b, err := json.Marshal(struct {
		Data    map[string]string `json:"data"`
		Managed any               `json:"managed"`
	}{cm.Data, mc.Spec.ManagedBootImages})
	if err != nil {
		return "", err
	}
	return digest(b), nil
}

// kmodRebuild applies the KMM day-0 proposal's "Cluster upgrade" to pool's ModuleDay0.
// Errors only stop the rebuild hint, never the run: the run's own kmod
// stages decide again from the cluster.
func (c *Controller) kmodRebuild(ctx context.Context, pool *mcfgv1.MachineConfigPool, w *world) (bool, string) {
	md := w.inputs.ModuleDay0
	if md == nil || !md.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade || c.OSVersion == nil || w.cv == nil {
		return false, ""
	}
	osVersion, err := c.OSVersion(ctx, w.inputs.BaseImage)
	if err != nil {
		return false, "reading the payload OS version: " + err.Error()
	}
	var nodes corev1.NodeList
	var nodeSel labels.Selector = labels.Everything()
	if ns := pool.Spec.NodeSelector; ns != nil {
		if s, err := metav1.LabelSelectorAsSelector(ns); err == nil {
			nodeSel = s
		}
	}
	if err := c.APIReader.List(ctx, &nodes, client.MatchingLabelsSelector{Selector: nodeSel}); err != nil {
		return false, "listing nodes: " + err.Error()
	}
	f := kmod.UpgradeFacts{ClusterVersion: w.cv.Status.Desired.Version, PayloadOSVersion: osVersion}
	for _, n := range nodes.Items {
		f.NodeOSImages = append(f.NodeOSImages, n.Status.NodeInfo.OSImage)
	}
	ok, why, err := kmod.NeedsUpgradeRebuild(md, f)
	if err != nil {
		return false, err.Error()
	}
	return ok, why
}

// waveOf reads a pool's kiln.dev/wave; pools without it are wave 0 and
// wait for nobody.
func waveOf(p *mcfgv1.MachineConfigPool) (int, bool, error) {
	n, ok, err := manifests.UintLabel("MachineConfigPool", p, LabelWave)
	if err != nil {
		return 0, false, fail(ReasonInputs, err)
	}
	return n, ok, nil
}

// PoolLabels validates and reads a pool's kiln.dev labels, the one check
// cluster mode (syncPool) and directory mode (PlanLocal) both run: a value
// neither "true" nor "false" for kiln.dev/enabled, or a kiln.dev/wave that
// is no non-negative integer, is an error naming the pool and the label,
// and the pool gets no run (and no revert).
func PoolLabels(p *mcfgv1.MachineConfigPool) (enabled bool, wave int, err error) {
	enabled, _, err = manifests.BoolLabel("MachineConfigPool", p, LabelEnabled)
	if err != nil {
		return false, 0, fail(ReasonInputs, err)
	}
	wave, _, err = waveOf(p)
	return enabled, wave, err
}
