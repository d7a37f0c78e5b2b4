package mcrender

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
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

// MCOInputsFile is where render saves the prediction's inputs, under
// render/ in the work workspace.
const MCOInputsFile = "mco-inputs.json"

// MCOInputsPath is render/mco-inputs.json in ws.
func MCOInputsPath(ws step.Workspace) string {
	return filepath.Join(filepath.Dir(ws.RenderedPath()), MCOInputsFile)
}

// MCOInputs are the objects MCO's render controller will read for the
// pool: the pool, the payload's defaults and every MachineConfig the pool's
// selector matches as MCO selects them (kiln's own osImageURL MCs
// included), as render saw them.
type MCOInputs struct {
	Pool     *mcfgv1.MachineConfigPool `json:"pool"`
	Defaults Defaults                  `json:"defaults"`
	Configs  []*mcfgv1.MachineConfig   `json:"machineConfigs"`
}

// NewMCOInputs selects pool's MachineConfigs from all as MCO does.
func NewMCOInputs(pool *mcfgv1.MachineConfigPool, all []*mcfgv1.MachineConfig, d Defaults) (*MCOInputs, error) {
	sel, err := SelectAsMCO(pool, all)
	if err != nil {
		return nil, err
	}
	return &MCOInputs{Pool: pool, Defaults: d, Configs: sel}, nil
}

// maxMCOInputs bounds mco-inputs.json: the pool's MachineConfigs, each at
// most 1.5 MiB in etcd, indented; a pool with more than a few dozen large
// ones is not one MCO could render either.
const maxMCOInputs = 64 << 20

// ReadMCOInputs reads render/mco-inputs.json, a regular file of at most
// maxMCOInputs bytes.
func ReadMCOInputs(ws step.Workspace) (*MCOInputs, error) {
	path := MCOInputsPath(ws)
	b, truncated, err := step.ReadRegular(path, maxMCOInputs)
	if err == nil && truncated {
		err = fmt.Errorf("larger than %d bytes", maxMCOInputs)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the prediction's inputs (render's %s): %w", MCOInputsFile, err)
	}
	in := &MCOInputs{}
	if err := json.Unmarshal(b, in); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if in.Pool == nil || len(in.Configs) == 0 {
		return nil, fmt.Errorf("%s names no pool or no MachineConfig", path)
	}
	return in, nil
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
func (in *MCOInputs) Predict(ctx context.Context, image string) (*Prediction, error) {
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

// PredictionRecord is image-sign's record of the prediction it attested
// (image/prediction.json): rollout checks that its own prediction for the
// image it rolls out is this one.
type PredictionRecord = trust.Prediction

// PredictionPath is image/prediction.json in ws.
func PredictionPath(ws step.Workspace) string {
	return filepath.Join(ws.StageDir(step.StageImageSign), trust.PredictionFile)
}

// ReadPredictionRecord reads image-sign's record; ok is false when there is
// none (image-sign did not run in this workspace).
func ReadPredictionRecord(ws step.Workspace) (PredictionRecord, bool, error) {
	var r PredictionRecord
	b, err := os.ReadFile(PredictionPath(ws))
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("reading image-sign's prediction: %w", err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("decoding %s: %w", PredictionPath(ws), err)
	}
	return r, true, nil
}

// PredictFromWorkspace is image-sign's prediction hook
// (signing.SignOptions.Predict): the prediction for image from render's
// mco-inputs.json in ws, nil when render left none (a workspace from
// before the drift gate; rollout then predicts by itself).
func PredictFromWorkspace(ctx context.Context, ws step.Workspace, image string) (*trust.Prediction, error) {
	in, err := ReadMCOInputs(ws)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p, err := in.Predict(ctx, image)
	if err != nil {
		return nil, err
	}
	return &trust.Prediction{Image: image, Name: p.Config.Name, Hash: p.Hash}, nil
}
