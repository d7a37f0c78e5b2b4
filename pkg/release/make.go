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
	"github.com/kiln-dev/kiln/pkg/release/build"
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
	imgs, _, err := build.Build(ctx, build.BuildOptions{Root: o.Root, StepsBase: o.StepsBase, Platform: o.Platform, WorkDir: work})
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
		if err := checkRegistry(o.Published, o.Registry); err != nil {
			return nil, err
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

// checkRegistry fails unless both of p's images are reg/<name>, compared
// as go-containerregistry names them (docker.io is index.docker.io).
func checkRegistry(p *Published, reg string) error {
	for _, x := range []struct{ name, image string }{{TriggerName, p.Trigger.Image}, {StepsName, p.Steps.Image}} {
		d, err := name.NewDigest(x.image)
		if err != nil {
			return fmt.Errorf("installing kiln: field %s.image %q: %w", x.name, x.image, err)
		}
		want, err := name.NewRepository(strings.TrimSuffix(reg, "/") + "/" + x.name)
		if err != nil {
			return fmt.Errorf("installing kiln: registry %q: %w", reg, err)
		}
		if d.Context().Name() != want.Name() {
			return fmt.Errorf("installing kiln: image %s is not in registry %s: run make images REGISTRY=%s first", x.image, reg, reg)
		}
	}
	return nil
}
