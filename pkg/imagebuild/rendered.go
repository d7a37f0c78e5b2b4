package imagebuild

import (
	"encoding/json"
	"fmt"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/pkg/safepath"
)

// maxRenderedFile bounds the read of render's output: the config itself is
// at most ignres.MaxRenderedConfig bytes as compact JSON, and render writes
// it indented, which can double a config of many short fields.
const maxRenderedFile = 4 * ignres.MaxRenderedConfig

// ReadRendered reads render's output, a full MachineConfig object.
func ReadRendered(path string) (*mcfgv1.MachineConfig, error) {
	b, truncated, err := safepath.ReadRegular(path, maxRenderedFile)
	if err != nil {
		return nil, fmt.Errorf("reading rendered config: %w", err)
	}
	if truncated {
		return nil, fmt.Errorf("reading rendered config %s: over %d bytes; a rendered config is at most %d bytes (MCO's limit), so this file was not written by render", path, maxRenderedFile, ignres.MaxRenderedConfig)
	}
	mc := &mcfgv1.MachineConfig{}
	if err := json.Unmarshal(b, mc); err != nil {
		return nil, fmt.Errorf("decoding rendered config %s: %w", path, err)
	}
	if mc.Kind != "MachineConfig" || mc.Name == "" {
		return nil, fmt.Errorf("decoding rendered config %s: kind %q name %q, want a named MachineConfig", path, mc.Kind, mc.Name)
	}
	return mc, nil
}
