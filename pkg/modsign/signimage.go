package modsign

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	"github.com/kiln-dev/kiln/pkg/layers"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// SignImageInput is one kmod-sign run.
type SignImageInput struct {
	// Source is the unsigned image; Target is osMapping.containerImage.
	Source, Target name.Reference
	// FilesToSign are sign.filesToSign, before expansion.
	FilesToSign []string
	Signer      *Signer
	// Remote reaches the registries (auth, transport, retries, mirrors):
	// Source is read through the mirrors, Target written to its own
	// registry.
	Remote registry.Remote
	// Depmod is kmod's depmod; empty means DefaultDepmod on PATH.
	Depmod string
}

// SignImageResult is the pushed image.
type SignImageResult struct {
	Digest v1.Hash
	// Signed are the module paths signed, sorted.
	Signed            []string
	KernelFullVersion string
	// Placement says where the modules and firmware went.
	Placement *Placement
}

// modulesIndexLimit caps how much of a module the index keeps in memory;
// kernel modules are far smaller, and a larger file is no module.
const modulesIndexLimit = 64 << 20

// SignImage signs the kernel modules named by FilesToSign and pushes the
// result as the unsigned image plus ONE layer holding the signed modules
// (same modes and owners) where the booted kernel loads them, with
// depmod's files for that kernel; /opt leaves the image (signedImage).
// Layers without /opt content stay shared with the unsigned image.
// Nothing is pushed when any file is missing, misplaced or fails to sign.
func SignImage(ctx context.Context, in SignImageInput) (*SignImageResult, error) {
	src, err := in.Remote.Image(ctx, in.Source)
	if err != nil {
		return nil, fmt.Errorf("reading unsigned image %s: %w", in.Source, err)
	}
	kver, err := ModuleKernel(src)
	if err != nil {
		return nil, fmt.Errorf("reading unsigned image %s: %w", in.Source, err)
	}
	files, err := imageFiles(src)
	if err != nil {
		return nil, fmt.Errorf("reading unsigned image %s: %w", in.Source, err)
	}
	paths, err := ExpandFilesToSign(files, in.FilesToSign, kver)
	if err != nil {
		return nil, err
	}
	out, pl, err := signedImage(src, files, paths, kver, func(_ string, m []byte) ([]byte, error) { return in.Signer.Sign(m) }, in.Depmod)
	if err != nil {
		return nil, err
	}
	if err := in.Remote.Write(ctx, in.Target, out); err != nil {
		return nil, fmt.Errorf("pushing signed image %s: %w", in.Target, err)
	}
	d, err := out.Digest()
	if err != nil {
		return nil, err
	}
	return &SignImageResult{Digest: d, Signed: paths, KernelFullVersion: kver, Placement: pl}, nil
}

// ModuleKernel is the kernel an unsigned kmod image's modules are for:
// KernelLabel, else the OS image's own kernel (KernelFullVersion), as for
// an unsigned image kiln did not build.
func ModuleKernel(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	if v := cf.Config.Labels[kmodbuild.KernelLabel]; v != "" {
		return v, nil
	}
	return kmodbuild.KernelFullVersion(img)
}

// imageFiles indexes the image's final filesystem: regular files with
// their content (up to modulesIndexLimit) for files that could be modules,
// and headers for everything else, as the flattened image has them.
func imageFiles(img v1.Image) (fstest.MapFS, error) {
	files := fstest.MapFS{}
	err := layers.Walk(img, func(p string, h *tar.Header, r io.Reader) error {
		if p == "" {
			return nil // the root folder itself
		}
		f := &fstest.MapFile{Mode: fs.FileMode(h.Mode).Perm(), ModTime: h.ModTime, Sys: header{uid: h.Uid, gid: h.Gid}}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Mode |= fs.ModeDir
		case tar.TypeReg:
			if (strings.HasSuffix(p, ".ko") || isMoved(p)) && h.Size <= modulesIndexLimit {
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				f.Data = b
			}
		case tar.TypeSymlink:
			f.Mode |= fs.ModeIrregular // links are never signed
			f.Sys = header{uid: h.Uid, gid: h.Gid, link: h.Linkname}
		default:
			f.Mode |= fs.ModeIrregular // nor devices
		}
		files[p] = f
		return nil
	})
	if err == nil {
		aliasOpt(files)
	}
	return files, err
}

type header struct {
	uid, gid int
	link     string
}

// optLinked reports whether the image's /opt is CoreOS's link into /var:
// a Dockerfile's COPY to /opt then writes under /var/opt.
func optLinked(files fstest.MapFS) bool {
	f, ok := files["opt"]
	if !ok || f.Mode.IsDir() || f.Mode.IsRegular() {
		return false
	}
	h, _ := f.Sys.(header)
	return path.Clean(strings.TrimPrefix(h.link, "/")) == "var/opt"
}

// aliasOpt lets filesToSign's /opt paths find what a COPY wrote through
// CoreOS's /opt link: every file under var/opt/ is also indexed under
// opt/. planPlacement moves the var/opt/ copy.
func aliasOpt(files fstest.MapFS) {
	if !optLinked(files) {
		return
	}
	for k, f := range files {
		if rest, ok := strings.CutPrefix(k, "var/opt/"); ok {
			files["opt/"+rest] = f
		}
	}
}
