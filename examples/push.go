package examples

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// Push writes the images to their repositories on host (plain HTTP: the
// registry is local) and returns their references by digest, in order.
// host "" means Registry, the one the manifests name; another host (a
// test's registry) gets the same repositories and digests, but the
// release image still names Registry inside. Blobs the registry has are
// skipped, so a second push is cheap.
func Push(ctx context.Context, host string, images []Named) ([]string, error) {
	r := local(host)
	var refs []string
	for _, n := range images {
		ref, err := n.Ref()
		if err != nil {
			return nil, err
		}
		if host != "" {
			ref = host + strings.TrimPrefix(ref, Registry)
		}
		d, err := r.ParseRef(ref)
		if err != nil {
			return nil, fmt.Errorf("pushing %s: %w", ref, err)
		}
		if err := r.Write(ctx, d, n.Image); err != nil {
			return nil, fmt.Errorf("pushing %s: %w", ref, err)
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// PushDriverToolkit pushes the driver-toolkit stand-in rootfs tarball
// (hack/dtk.sh) as a one-layer image to DriverToolkitImage on host (""
// means Registry): the release image names it by that tag.
func PushDriverToolkit(ctx context.Context, host, tarballPath string) (string, error) {
	layer, err := tarball.LayerFromFile(tarballPath)
	if err != nil {
		return "", fmt.Errorf("reading the driver-toolkit stand-in %s: %w", tarballPath, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", err
	}
	ref := DriverToolkitImage
	if host != "" {
		ref = strings.Replace(ref, Registry, host, 1)
	}
	r := local(host)
	parsed, err := r.ParseRef(ref)
	if err != nil {
		return "", err
	}
	if err := r.Write(ctx, parsed, img); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return parsed.Context().Digest(d.String()).String(), nil
}

// local reaches host ("" means Registry) over plain HTTP.
func local(host string) registry.Remote {
	if host == "" {
		host = Registry
	}
	return registry.Remote{Insecure: []string{host}}
}

// PushNextBase pushes the sample base OS image with one more label
// (key=value: a new digest, the same files) to BaseRepository on host, as
// a new release's OS image, and returns it by digest.
func PushNextBase(ctx context.Context, host, key, value string) (string, error) {
	base, err := BaseImage()
	if err != nil {
		return "", err
	}
	cfg, err := base.ConfigFile()
	if err != nil {
		return "", fmt.Errorf("reading the base image's config: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Labels[key] = value
	next, err := mutate.ConfigFile(base, cfg)
	if err != nil {
		return "", fmt.Errorf("labelling the base image: %w", err)
	}
	refs, err := Push(ctx, host, []Named{{Repository: BaseRepository, Image: next}})
	if err != nil {
		return "", err
	}
	return refs[0], nil
}
