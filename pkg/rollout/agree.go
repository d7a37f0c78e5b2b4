package rollout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/pkg/work"
)

// checkAgreement refuses a rollout whose image, work folder and pool do
// not agree: render's inputs in ws must be for pool, and the image
// image-build recorded in ws must be image, built for pool. Without it,
// `rollout --pool master` given worker's work folder and image would put
// worker's configuration on master's nodes. What a workspace does not
// hold (a rollout Task run on its own) is not checked; what it holds is
// read in full, and an unreadable record is an error.
func checkAgreement(ws work.Workspace, pool, image string) error {
	if ws.Root == "" {
		return nil
	}
	in, err := ws.ReadMCOInputs()
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("checking the work folder against pool %s: %w", pool, err)
	case in.Pool.Name != pool:
		return fmt.Errorf("refusing to roll out to pool %s: the work folder's render (%s) is for pool %s",
			pool, ws.MCOInputsPath(), in.Pool.Name)
	}
	path := filepath.Join(ws.StageDir(work.StageImageBuild), "build.json")
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	rec, err := trust.ReadRecord(path)
	if err != nil {
		return fmt.Errorf("checking the work folder against pool %s: %w", pool, err)
	}
	if built := rec.Inputs.Parameters["pool"]; built != pool {
		return fmt.Errorf("refusing to roll out to pool %s: the work folder's image (%s) was built for pool %s", pool, path, built)
	}
	if rec.Ref != image {
		return fmt.Errorf("refusing to roll out %s to pool %s: the work folder's image (%s) is %s", image, pool, path, rec.Ref)
	}
	return nil
}
