package kmod

import (
	"context"
	"fmt"
	"slices"

	configv1 "github.com/openshift/api/config/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// needsDTK: DTK_AUTO is read from the release only when the Dockerfile
// uses it together with OS_AUTO. DTK_AUTO alone is refused by BuildArgs
// (the day-0 proposal), and that error must not hide behind a registry call.
func needsDTK(dockerfile string) bool {
	args := DockerfileArgs(dockerfile)
	return slices.Contains(args, kmodbuild.ArgDTKAuto) && slices.Contains(args, kmodbuild.ArgOSAuto)
}

// driverToolkit finds DTK_AUTO when --dtk-image is empty: the
// driver-toolkit tag of the release image the ClusterVersion names
// (status.desired.image), as KMM's DTK ImageStream is filled from the same
// payload. The ClusterVersion comes from where the other inputs do.
func driverToolkit(ctx context.Context, r registry.Remote, c client.Reader, md *kmmv1beta1.ModuleDay0) (string, error) {
	wrap := func(err error) error {
		return fmt.Errorf("ModuleDay0 %s/%s: finding DTK_AUTO (no --dtk-image): %w", md.Namespace, md.Name, err)
	}
	cv, err := clusterVersion(ctx, c)
	if err != nil {
		return "", wrap(err)
	}
	if cv == nil {
		return "", wrap(fmt.Errorf("ClusterVersion %s not found", payload.ClusterVersionName))
	}
	f := payload.Facts{ReleaseImage: cv.Status.Desired.Image}
	if f, err = f.WithDriverToolkit(ctx, r); err != nil {
		return "", wrap(err)
	}
	return f.DriverToolkitImage, nil
}

// clusterVersion reads ClusterVersion "version", or nil when there is none.
func clusterVersion(ctx context.Context, c client.Reader) (*configv1.ClusterVersion, error) {
	cv := &configv1.ClusterVersion{}
	err := c.Get(ctx, client.ObjectKey{Name: payload.ClusterVersionName}, cv)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading ClusterVersion %s: %w", payload.ClusterVersionName, err)
	}
	return cv, nil
}
