package work

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/safepath"
)

// MCOInputsFile is where render saves the drift gate's prediction inputs,
// under render/ in the work workspace.
const MCOInputsFile = "mco-inputs.json"

// MCOInputsPath is render/mco-inputs.json.
func (w Workspace) MCOInputsPath() string {
	return filepath.Join(filepath.Dir(w.RenderedPath()), MCOInputsFile)
}

// Defaults are the payload's values for the fields an MC may override.
// They are part of the prediction's inputs (MCOInputs).
type Defaults struct {
	OSImageURL      string
	ExtensionsImage string
	ReleaseVersion  string
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

// maxMCOInputs bounds mco-inputs.json: the pool's MachineConfigs, each at
// most 1.5 MiB in etcd, indented; a pool with more than a few dozen large
// ones is not one MCO could render either.
const maxMCOInputs = 64 << 20

// ReadMCOInputs reads render/mco-inputs.json, a regular file of at most
// maxMCOInputs bytes.
func (w Workspace) ReadMCOInputs() (*MCOInputs, error) {
	path := w.MCOInputsPath()
	b, truncated, err := safepath.ReadRegular(path, maxMCOInputs)
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

// Input is one line of inputs.json.
type Input struct {
	Kind            string `json:"kind"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	// SpecHash is sha256:<hex> of the JSON of the object's spec (data for a
	// ConfigMap, status.desired for the ClusterVersion).
	SpecHash string `json:"specHash"`
	// Role is RoleCurrent for the pool's current rendered config, read to
	// check the new one is reconcilable with it but not merged; empty for
	// every other input.
	Role string `json:"role,omitempty"`
}

// RoleCurrent marks the pool's current rendered config in inputs.json: an
// input of the render, not one of the MachineConfigs it merged.
const RoleCurrent = "current"
