package reproduce

import (
	"bytes"
	"fmt"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/safepath"
)

// maxRenderedBytes bounds a rendered config read from an image or a
// file: MCO's cap, with room for `oc get -o json`'s indentation and
// metadata.
const maxRenderedBytes = 4 * ignres.MaxRenderedConfig

// renderedConfig is the rendered MachineConfig a node image was built
// from, taken from file when it is set (e.g. `oc get mc rendered-… -o
// json`), else from the image's own imagebuild.CurrentConfigPath, with the
// sha256 of its normalised form: the hash kiln attests. The caller uses
// it only when that hash is the attested one: then it is a verified
// input, wherever it came from.
func renderedConfig(img v1.Image, file string) (mc *mcfgv1.MachineConfig, hash string, err error) {
	var raw []byte
	from := file
	if file != "" {
		// Only a regular file, through the cap: a FIFO or /dev/zero
		// named here neither hangs nor fills memory.
		var truncated bool
		if raw, truncated, err = safepath.ReadRegular(file, maxRenderedBytes); err != nil {
			return nil, "", fmt.Errorf("reading --rendered-config: %w", err)
		}
		if truncated {
			raw = append(raw, 0) // one byte over: refused below
		}
	} else {
		from = "the image's " + imagebuild.CurrentConfigPath
		// The search honours whiteouts and opaque folders, as a container
		// runtime extracts the image.
		if raw, err = payload.ReadImageFileLimit(img, imagebuild.CurrentConfigPath, maxRenderedBytes); err != nil {
			return nil, "", fmt.Errorf("reading the rendered config from %s: %w (pass it with --rendered-config)", from, err)
		}
	}
	if len(raw) > maxRenderedBytes {
		return nil, "", exitcode.InputRejected(fmt.Errorf("rendered config %s: over %d bytes", from, maxRenderedBytes))
	}
	if mc, err = decodeMachineConfig(from, raw); err != nil {
		return nil, "", err
	}
	plan, err := imagebuild.PlanLayer(mc)
	if err != nil {
		return nil, "", fmt.Errorf("rendered config %s: %w", from, err)
	}
	return mc, imagebuild.RenderedHash(plan), nil
}

// decodeMachineConfig decodes exactly one MachineConfig, strictly, with
// the reader every manifest goes through.
func decodeMachineConfig(from string, raw []byte) (*mcfgv1.MachineConfig, error) {
	var mc *mcfgv1.MachineConfig
	err := manifests.Decode(from, bytes.NewReader(raw), func(o runtime.Object) error {
		m, ok := o.(*mcfgv1.MachineConfig)
		if !ok {
			return exitcode.InputRejected(fmt.Errorf("%s is a %s, want a MachineConfig", manifests.ObjectName(o), o.GetObjectKind().GroupVersionKind().Kind))
		}
		if mc != nil {
			return exitcode.InputRejected(fmt.Errorf("more than one MachineConfig"))
		}
		mc = m
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decoding rendered config: %w", err)
	}
	if mc == nil {
		return nil, exitcode.InputRejected(fmt.Errorf("decoding rendered config %s: no MachineConfig", from))
	}
	return mc, nil
}
