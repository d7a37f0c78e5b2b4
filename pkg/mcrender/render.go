package mcrender

import (
	"context"
	"fmt"
	"strings"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// Request is everything one render needs. Render never contacts a container
// registry: image references are recorded as given.
type Request struct {
	Pool *mcfgv1.MachineConfigPool
	// Configs are all MachineConfigs known; Select picks the pool's.
	Configs []*mcfgv1.MachineConfig
	// Defaults are the payload's images and release version.
	Defaults Defaults
	// Sources resolves remote sources before the merge (kiln's render
	// stage fetches and embeds them); nil leaves them for the node's
	// Ignition, as MCO does.
	Sources Sources
	// OnInput, when set, is called for each input MC in merge order.
	OnInput func(i int, mc *mcfgv1.MachineConfig)
	// AsMCO renders as MCO's render controller itself does, without kiln's
	// two deliberate differences that change the rendered name: kiln's own
	// osImageURL MachineConfigs are selected (SelectAsMCO), and remote
	// sources are left as they are for the node's Ignition instead of being
	// fetched and embedded (Sources is not used). The drift gate's
	// prediction (Predict) and test/mcosim render this way; kiln's own
	// render does not.
	AsMCO bool
}

// Sources resolves the remote sources of one render's inputs. It is a
// seam because resolving them is kiln's deliberate difference from MCO,
// which leaves them to Ignition at first boot; the render stage
// (pkg/render) implements it by fetching, checking and embedding them.
type Sources interface {
	// Open starts one render. The returned context bounds all of the
	// render's fetches, resolve is called for each input's parsed and
	// valid config in merge order, and cancel when the render ends.
	Open(ctx context.Context) (_ context.Context, cancel context.CancelFunc, resolve Resolver)
}

// Resolver returns the config of MachineConfig mc with its remote sources
// resolved; its errors name mc and the field.
type Resolver func(ctx context.Context, mc string, cfg ign35types.Config) (ign35types.Config, error)

// keepSources is the Resolver of MCO's behaviour: the config as it is.
func keepSources(_ context.Context, _ string, cfg ign35types.Config) (ign35types.Config, error) {
	return cfg, nil
}

// Result is a rendered config and what it was made of.
type Result struct {
	// Config is the rendered MachineConfig, a complete object.
	Config *mcfgv1.MachineConfig
	// Inputs are the MCs merged, in merge order.
	Inputs []*mcfgv1.MachineConfig
	// Current is the pool's current rendered config when the inputs hold it;
	// the new config was checked to be reconcilable with it.
	Current *mcfgv1.MachineConfig
}

// Render renders req.Pool's MachineConfigs into one MachineConfig the way
// MCO's render controller does, with remote sources resolved by
// req.Sources and a reconcilability check against the pool's current
// config. Nothing is written; on error no result is returned.
func Render(ctx context.Context, req Request) (*Result, error) {
	res, err := render(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("rendering pool %q: %w", req.Pool.Name, err)
	}
	return res, nil
}

func render(ctx context.Context, req Request) (*Result, error) {
	inputs, err := selectConfigs(req.Pool, req.Configs, !req.AsMCO)
	if err != nil {
		return nil, err
	}
	resolve := Resolver(keepSources)
	if req.Sources != nil && !req.AsMCO {
		var cancel context.CancelFunc
		ctx, cancel, resolve = req.Sources.Open(ctx)
		defer cancel()
	}
	ps := make([]parsed, len(inputs))
	for i, mc := range inputs {
		if req.OnInput != nil {
			req.OnInput(i, mc)
		}
		if ps[i], err = parseMC(ctx, resolve, mc); err != nil {
			return nil, err
		}
	}
	spec, merged, err := merge(ps, req.Defaults)
	if err != nil {
		return nil, err
	}
	if err := checkContent(merged, ps); err != nil {
		return nil, err
	}
	out, err := assemble(req.Pool, inputs, spec, req.Defaults)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: out, Inputs: inputs}
	if cur := currentConfig(req.Pool, req.Configs); cur != nil && cur.Name != out.Name {
		if err := checkReconcilable(cur, merged, out.Spec.FIPS, ps); err != nil {
			return nil, err
		}
		res.Current = cur
	}
	return res, nil
}

// parseMC validates one input and returns its config at spec 3.5 with its
// remote sources resolved.
func parseMC(ctx context.Context, resolve Resolver, mc *mcfgv1.MachineConfig) (parsed, error) {
	if err := validateSpec(mc); err != nil {
		return parsed{}, exitcode.InputRejected(err)
	}
	p := parsed{mc: mc, hasConfig: len(mc.Spec.Config.Raw) > 0}
	if !p.hasConfig {
		return p, nil
	}
	cfg, err := parseConfig(mc.Spec.Config.Raw)
	if err != nil {
		return p, exitcode.InputRejected(fmt.Errorf("MachineConfig %q: spec.config: %w", mc.Name, err))
	}
	if err := validateConfig(cfg); err != nil {
		return p, exitcode.InputRejected(fmt.Errorf("MachineConfig %q: spec.config: %w", mc.Name, err))
	}
	if err := coreUserOnly(cfg); err != nil {
		return p, exitcode.InputRejected(fmt.Errorf("MachineConfig %q: spec.config.%w", mc.Name, err))
	}
	if p.cfg, err = resolve(ctx, mc.Name, cfg); err != nil {
		return p, err
	}
	return p, nil
}

// assemble makes the complete MachineConfig object: MCO's name, the pool as
// controller owner (when it has a UID), the release version and override
// annotations, and kiln's list of inputs.
func assemble(pool *mcfgv1.MachineConfigPool, inputs []*mcfgv1.MachineConfig, spec mcfgv1.MachineConfigSpec, d Defaults) (*mcfgv1.MachineConfig, error) {
	name, err := RenderedName(pool.Name, spec)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(inputs))
	for i, mc := range inputs {
		names[i] = mc.Name
	}
	mc := &mcfgv1.MachineConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   name,
			Labels: map[string]string{PoolLabel: pool.Name},
			Annotations: map[string]string{
				ReleaseVersionAnnotation: d.ReleaseVersion,
				InputsAnnotation:         strings.Join(names, ","),
			},
		},
		Spec: spec,
	}
	if spec.OSImageURL != d.OSImageURL {
		mc.Annotations[OverriddenAnnotation] = "true"
	}
	if pool.UID != "" {
		yes := true
		mc.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfigPool",
			Name: pool.Name, UID: pool.UID, Controller: &yes, BlockOwnerDeletion: &yes,
		}}
	}
	if err := checkSize(pool, inputs, name, spec, d); err != nil {
		return nil, err
	}
	return mc, nil
}

// currentConfig is the pool's current rendered config, when the inputs
// hold it: spec.configuration.name (what MCO compares with), else
// status.configuration.name.
func currentConfig(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig) *mcfgv1.MachineConfig {
	name := pool.Spec.Configuration.Name
	if name == "" {
		name = pool.Status.Configuration.Name
	}
	if name == "" {
		return nil
	}
	for _, mc := range all {
		if mc.Name == name {
			return mc
		}
	}
	return nil
}
