package mcrender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// The drift gate (README "Drift gate") needs the name MCO will give the
// pool's next rendered config once kiln's osImageURL MachineConfig, with
// the image digest, is merged. Render cannot compute it: the digest is only
// known after image-build. So render saves what the prediction needs
// (MCOInputs, render/mco-inputs.json) and Predict, this package's code,
// computes it where the digest is known:
//
//   - image-sign (pkg/signing) calls it with the image it signs, records
//     the name as the PREDICTED_RENDERED_NAME result and in the SLSA
//     provenance (runDetails.byproducts), so the prediction is attested
//     with the image;
//   - rollout (pkg/rollout) calls it again with the image it rolls out, for
//     the full predicted config the gate diffs against MCO's, and refuses
//     to go on when its name is not the attested one.
//
// Both run Render's own selection, merge and name code with AsMCO set; there
// is no second implementation of MCO's rules.

// NewMCOInputs selects pool's MachineConfigs from all as MCO does: the
// prediction's inputs (work.MCOInputs), which render saves in
// render/mco-inputs.json.
func NewMCOInputs(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig, d Defaults) (*work.MCOInputs, error) {
	sel, err := SelectAsMCO(pool, all)
	if err != nil {
		return nil, err
	}
	return &work.MCOInputs{Pool: pool, Defaults: d, Configs: sel}, nil
}

// Prediction is the rendered config MCO is expected to make.
type Prediction struct {
	// Config is the predicted rendered MachineConfig; its name is
	// PREDICTED_RENDERED_NAME.
	Config *mcfgv1.MachineConfig
	// Inputs are the MCs merged, in MCO's order, kiln's included.
	Inputs []*mcfgv1.MachineConfig
	// Hash is sha256:<hex> of the JSON of the predicted spec (as
	// CONFIG_HASH is of the rendered one).
	Hash string
}

// Predict renders in's pool with osImage (kiln's MachineConfig for the new
// image, OSImageConfig) in place of any MachineConfig of that name, by the
// same selection, merge and name rules as Render, as MCO does (AsMCO).
func Predict(ctx context.Context, in *work.MCOInputs, image string) (*Prediction, error) {
	osImage, err := OSImageConfig(in.Pool, image)
	if err != nil {
		return nil, err
	}
	configs := make([]*mcfgv1.MachineConfig, 0, len(in.Configs)+1)
	for _, mc := range in.Configs {
		if mc.Name != osImage.Name {
			configs = append(configs, mc)
		}
	}
	configs = append(configs, osImage)
	res, err := Render(ctx, Request{Pool: in.Pool, Configs: configs, Defaults: in.Defaults, AsMCO: true})
	if err != nil {
		return nil, fmt.Errorf("predicting MCO's rendered config: %w", err)
	}
	b, err := json.Marshal(res.Config.Spec)
	if err != nil {
		return nil, fmt.Errorf("hashing the predicted config: %w", err)
	}
	sum := sha256.Sum256(b)
	return &Prediction{Config: res.Config, Inputs: res.Inputs, Hash: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// PredictFromWorkspace is image-sign's prediction hook
// (signing.SignOptions.Predict): the prediction for image from render's
// mco-inputs.json in ws, nil when render left none (a workspace from
// before the drift gate; rollout then predicts by itself).
func PredictFromWorkspace(ctx context.Context, ws work.Workspace, image string) (*trust.Prediction, error) {
	in, err := ws.ReadMCOInputs()
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := Predict(ctx, in, image)
	if err != nil {
		return nil, err
	}
	return &trust.Prediction{Image: image, Name: p.Config.Name, Hash: p.Hash}, nil
}
