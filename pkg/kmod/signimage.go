package kmod

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// OSTreeLinuxLabel is the label RHCOS images carry with their kernel's
// full version.
const OSTreeLinuxLabel = "ostree.linux"

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
}

// SignImageResult is the pushed image.
type SignImageResult struct {
	Digest v1.Hash
	// Signed are the module paths signed, sorted.
	Signed            []string
	KernelFullVersion string
}

// modulesIndexLimit caps how much of a module the index keeps in memory;
// kernel modules are far smaller, and a larger file is no module.
const modulesIndexLimit = 64 << 20

// SignImage signs the kernel modules named by FilesToSign and pushes the
// result as the unsigned image plus ONE layer holding the signed modules
// (same paths, modes and owners), so the base layers stay shared with the
// unsigned image. Nothing is pushed when any file is missing or fails to
// sign.
func SignImage(ctx context.Context, in SignImageInput) (*SignImageResult, error) {
	src, err := in.Remote.Image(ctx, in.Source)
	if err != nil {
		return nil, fmt.Errorf("reading unsigned image %s: %w", in.Source, err)
	}
	kver, err := KernelFullVersion(src)
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
	out, err := signedImage(src, files, paths, kver, func(_ string, m []byte) ([]byte, error) { return in.Signer.Sign(m) })
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
	return &SignImageResult{Digest: d, Signed: paths, KernelFullVersion: kver}, nil
}

// signedImage is src plus one layer holding the modules at paths as sign
// returns them: SignImage signs with the key, Resign puts back the
// signatures of an image under check. Both assemble it here, so that the
// same signed modules give the same image.
func signedImage(src v1.Image, files fstest.MapFS, paths []string, kver string, sign func(path string, module []byte) ([]byte, error)) (v1.Image, error) {
	lt, err := osimage.LayerTypeFor(src)
	if err != nil {
		return nil, err
	}
	layer, err := signedLayer(files, paths, sign, lt)
	if err != nil {
		return nil, err
	}
	return mutate.Append(src, mutate.Addendum{Layer: layer, History: v1.History{
		CreatedBy: fmt.Sprintf("kiln: kmod-sign %d module(s) for kernel %s", len(paths), kver),
		Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
	}})
}

// KernelFullVersion reads the kernel version of an OS image: the
// ostree.linux label RHCOS sets, else the only folder under
// /usr/lib/modules.
func KernelFullVersion(img v1.Image) (string, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	if v := cf.Config.Labels[OSTreeLinuxLabel]; v != "" {
		return v, nil
	}
	var versions []string
	err = walkLayers(img, func(h *tar.Header, _ io.Reader) error {
		p := strings.TrimPrefix(path.Clean(h.Name), "./")
		if rest, ok := strings.CutPrefix(p, "usr/lib/modules/"); ok && rest != "" && !strings.Contains(rest, "/") && h.Typeflag == tar.TypeDir {
			versions = append(versions, rest)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(versions)
	versions = slices.Compact(versions)
	if len(versions) != 1 {
		return "", fmt.Errorf("cannot tell the kernel version: no %s label and %d folders under /usr/lib/modules %v", OSTreeLinuxLabel, len(versions), versions)
	}
	return versions[0], nil
}

// imageFiles indexes the image's final filesystem: regular files with
// their content (up to modulesIndexLimit) for files that could be modules,
// and headers for everything else. Later layers win; whiteouts remove.
func imageFiles(img v1.Image) (fstest.MapFS, error) {
	files := fstest.MapFS{}
	err := walkLayers(img, func(h *tar.Header, r io.Reader) error {
		p := strings.TrimPrefix(path.Clean(h.Name), "./")
		dir, base := path.Split(p)
		if strings.HasPrefix(base, ".wh.") {
			deleteTree(files, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
			return nil
		}
		f := &fstest.MapFile{Mode: fs.FileMode(h.Mode).Perm(), ModTime: h.ModTime, Sys: header{uid: h.Uid, gid: h.Gid}}
		switch h.Typeflag {
		case tar.TypeDir:
			f.Mode |= fs.ModeDir
		case tar.TypeReg:
			if strings.HasSuffix(p, ".ko") && h.Size <= modulesIndexLimit {
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				f.Data = b
			}
		default:
			f.Mode |= fs.ModeIrregular // links and devices are never signed
		}
		files[p] = f
		return nil
	})
	return files, err
}

type header struct{ uid, gid int }

func deleteTree(files fstest.MapFS, p string) {
	for k := range files {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(files, k)
		}
	}
}

// walkLayers calls fn for every entry of every layer, bottom first.
func walkLayers(img v1.Image, fn func(*tar.Header, io.Reader) error) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return fmt.Errorf("layer %d: %w", i, err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return fmt.Errorf("layer %d: %w", i, err)
			}
			if err := fn(h, tr); err != nil {
				rc.Close()
				return err
			}
		}
		rc.Close()
	}
	return nil
}

// signedLayer signs each module and packs them, sorted, with fixed times,
// keeping mode and owner: the same inputs give the same layer.
func signedLayer(files fstest.MapFS, paths []string, sign func(path string, module []byte) ([]byte, error), lt types.MediaType) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := files[strings.TrimPrefix(p, "/")]
		if f.Data == nil {
			return nil, fmt.Errorf("signing %s: not a regular .ko file of at most %d bytes", p, modulesIndexLimit)
		}
		signed, err := sign(p, f.Data)
		if err != nil {
			return nil, fmt.Errorf("signing %s: %w", p, err)
		}
		own, _ := f.Sys.(header)
		h := &tar.Header{Name: strings.TrimPrefix(p, "/"), Mode: int64(f.Mode.Perm()), Size: int64(len(signed)),
			Uid: own.uid, Gid: own.gid, ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(signed); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(lt))
}
