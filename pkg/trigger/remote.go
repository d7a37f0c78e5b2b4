package trigger

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kiln-dev/kiln/pkg/moduleday0"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// Remote is how the trigger reads registries itself in cluster mode
// (payload tags, the OS image's version label, kmod images): through the
// mirrors, insecure registries and CAs the cluster's objects say now, as
// its runs do (registries.go), and its own --insecure-registry. The
// objects come from the manager's cache, so reading them per call is
// cheap and never stale. Credentials are $REGISTRY_AUTH_FILE's or the
// default files' (registry.Remote.Keychain).
func (c *Controller) Remote(ctx context.Context) (registry.Remote, error) {
	in, err := c.clusterInputs(ctx)
	if err != nil {
		return registry.Remote{}, err
	}
	cfg, err := registry.FromCluster(in)
	if err != nil {
		return registry.Remote{}, fail(ReasonRegistries, fmt.Errorf("making the registries config from the mirror sets and image.config.openshift.io/%s: %w", clusterConfigName, err))
	}
	return registry.Remote{Insecure: c.Insecure, Config: cfg}, nil
}

// resolve pins a payload image by digest, through c.Remote. A reference
// by digest is returned as given, without reading the cluster's registry
// objects: an invalid mirror set or CA must hold runs back only where the
// run itself reports it (ReasonRegistries on the pool), not here.
func (c *Controller) resolve(ctx context.Context, ref string) (string, error) {
	if d, err := name.NewDigest(ref); err == nil {
		return d.String(), nil
	}
	r, err := c.Remote(ctx)
	if err != nil {
		return "", err
	}
	return payload.Resolve(ctx, ref, r)
}

// osVersion reads an OS image's "version" label (RHCOS sets it), which
// the KMM day-0 proposal's upgrade rule compares with the nodes' osImage. The OS image is
// a payload image: read through the mirrors.
func (c *Controller) osVersion(ctx context.Context, ref string) (string, error) {
	r, err := c.Remote(ctx)
	if err != nil {
		return "", err
	}
	parsed, err := r.ParseRef(ref)
	if err != nil {
		return "", err
	}
	img, err := r.Image(ctx, parsed)
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	return cf.Config.Labels["version"], nil
}

// kmodImageExists is the ModuleDay0 sync's check, through c.Remote.
func (c *Controller) kmodImageExists(ctx context.Context, ref string) (bool, error) {
	r, err := c.Remote(ctx)
	if err != nil {
		return false, err
	}
	return moduleday0.RemoteExists(r)(ctx, ref)
}
