package release

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// ImagesOptions are what `make images` does: build both images from Root,
// push them to Registry (host[:port]/namespace) as Tag, sign and attest
// them, and write images.json and images.env into OutDir.
type ImagesOptions struct {
	Root, StepsBase string
	Registry, Tag   string
	Platform        Platform
	Remote          registry.Remote
	Sign            Signer
	OutDir          string
}

// MakeImages runs `make images` and prints the pushed digests to out.
func MakeImages(ctx context.Context, o ImagesOptions, out io.Writer) (*Published, error) {
	if err := CheckTag(o.Tag); err != nil {
		return nil, err
	}
	if _, err := CheckRepository(o.Remote, o.Registry); err != nil {
		return nil, err
	}
	src, err := SourceOf(ctx, o.Root)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "kiln-images-")
	if err != nil {
		return nil, fmt.Errorf("building kiln's images: %w", err)
	}
	defer os.RemoveAll(work)
	imgs, _, err := Build(ctx, BuildOptions{Root: o.Root, StepsBase: o.StepsBase, Platform: o.Platform, WorkDir: work})
	if err != nil {
		return nil, err
	}
	p, err := Publish(ctx, o.Remote, o.Registry, o.Tag, o.Platform, src, imgs, o.Sign)
	if err != nil {
		return nil, err
	}
	if err := p.WriteFiles(o.OutDir); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		name string
		p    Pushed
	}{{TriggerName, p.Trigger}, {StepsName, p.Steps}} {
		fmt.Fprintf(out, "%s %s\n  signature   %s\n  provenance  %s\n", x.name, x.p.Image, x.p.Signature, x.p.Attestation)
	}
	fmt.Fprintf(out, "wrote %s and %s\n", filepath.Join(o.OutDir, "images.json"), filepath.Join(o.OutDir, "images.env"))
	return p, nil
}

// InstallOptions are what `make install` does: write the overlay of
// Config pinned to Published into OverlayDir, render it and install it
// with Client.
type InstallOptions struct {
	Config, OverlayDir string
	Published          *Published
	// Registry, when set, must be where Published's images are: a guard
	// against installing another registry's images than the one named.
	Registry string
	Patches  []Patch
	Client   client.Client
}

// MakeInstall runs `make install` and prints what it did to out.
func MakeInstall(ctx context.Context, o InstallOptions, out io.Writer) (*InstallResult, error) {
	if o.Registry != "" {
		for _, img := range []string{o.Published.Trigger.Image, o.Published.Steps.Image} {
			d, err := name.NewDigest(img)
			if err != nil {
				return nil, fmt.Errorf("installing kiln: image %q: %w", img, err)
			}
			if repo := d.Context().Name(); !strings.HasPrefix(repo, strings.TrimSuffix(o.Registry, "/")+"/") {
				return nil, fmt.Errorf("installing kiln: image %s is not in registry %s: run make images REGISTRY=%s first", img, o.Registry, o.Registry)
			}
		}
	}
	if err := WriteOverlay(o.OverlayDir, o.Config, o.Published, o.Patches); err != nil {
		return nil, err
	}
	objs, err := Render(o.OverlayDir)
	if err != nil {
		return nil, err
	}
	res, err := Install(ctx, o.Client, objs, out)
	if err != nil {
		return res, err
	}
	fmt.Fprintf(out, "installed kiln %s from %s: %d objects applied, %d pruned, %d skipped, %d runs of an older kiln relabeled\n",
		o.Published.Tag, filepath.Join(o.OverlayDir, "kustomization.yaml"), len(res.Applied), len(res.Pruned), len(res.Skipped), len(res.Relabeled))
	return res, nil
}
