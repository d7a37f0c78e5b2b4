package modsign

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
)

// placedFile is one regular file of the placement layer.
type placedFile struct {
	data     []byte
	mode     int64
	uid, gid int
}

// signedImage is src without the folders a node never applies (/opt,
// /var/opt, /var/lib/firmware; see place.go), plus ONE layer holding the
// modules at paths as sign returns them, moved to the booted kernel's
// folder, the firmware moved to /usr/lib/firmware, and depmod's files for
// that kernel. SignImage signs with the key, Resign puts back the
// signatures of an image under check; both assemble it here, so that the
// same signed modules give the same image.
func signedImage(src v1.Image, files fstest.MapFS, paths []string, kver string, sign func(path string, module []byte) ([]byte, error), depmod string) (v1.Image, *Placement, error) {
	lt, err := imagebuild.LayerTypeFor(src)
	if err != nil {
		return nil, nil, err
	}
	pl, err := planPlacement(files, canonical(files, paths), kver)
	if err != nil {
		return nil, nil, err
	}
	out, err := placedFiles(files, paths, pl, sign)
	if err != nil {
		return nil, nil, err
	}
	modules := map[string][]byte{}
	for p, f := range out {
		if strings.HasPrefix(p, ModulesDir+kver+"/") && isModule(p) {
			modules[p] = f.data
		}
	}
	deps, err := runDepmod(depmod, src, kver, modules)
	if err != nil {
		return nil, nil, err
	}
	for p, data := range deps {
		out[p] = placedFile{data: data, mode: 0o644}
		pl.Depmod = append(pl.Depmod, "/"+p)
	}
	sort.Strings(pl.Depmod)
	base, err := withoutMoved(src, lt)
	if err != nil {
		return nil, nil, err
	}
	layer, err := placementLayer(files, out, lt)
	if err != nil {
		return nil, nil, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		CreatedBy: fmt.Sprintf("kiln: kmod-sign %d module(s) into %s", len(paths), ModuleDir(kver)),
		Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
	}})
	return img, pl, err
}

// canonical maps filesToSign matches through CoreOS's /opt link: the file
// a COPY to /opt wrote is the one under /var/opt.
func canonical(files fstest.MapFS, paths []string) []string {
	if !optLinked(files) {
		return paths
	}
	out := make([]string, len(paths))
	for i, p := range paths {
		if rest, ok := strings.CutPrefix(p, "/opt/"); ok {
			p = "/var/opt/" + rest
		}
		out[i] = p
	}
	return out
}

// placedFiles signs each module of paths and puts it, and every other
// moved file, at its place, keeping mode and owner.
func placedFiles(files fstest.MapFS, paths []string, pl *Placement, sign func(string, []byte) ([]byte, error)) (map[string]placedFile, error) {
	dest := map[string]string{}
	for _, m := range append(append([]Move(nil), pl.Modules...), pl.Firmware...) {
		dest[m.From] = m.To
	}
	out := map[string]placedFile{}
	signedFrom := map[string]bool{}
	for i, p := range canonical(files, paths) {
		f := files[strings.TrimPrefix(p, "/")]
		if f == nil || f.Data == nil {
			return nil, fmt.Errorf("signing %s: not a regular .ko file of at most %d bytes", paths[i], modulesIndexLimit)
		}
		signed, err := sign(paths[i], f.Data)
		if err != nil {
			return nil, fmt.Errorf("signing %s: %w", paths[i], err)
		}
		to := p
		if d, ok := dest[p]; ok {
			to = d
		}
		out[strings.TrimPrefix(to, "/")] = fileOf(f, signed)
		signedFrom[p] = true
	}
	for from, to := range dest {
		if signedFrom[from] {
			continue
		}
		f := files[strings.TrimPrefix(from, "/")]
		if f.Data == nil {
			return nil, fmt.Errorf("placing modules: %s is over kiln's limit of %d bytes a file", from, modulesIndexLimit)
		}
		out[strings.TrimPrefix(to, "/")] = fileOf(f, f.Data)
	}
	return out, nil
}

func fileOf(f *fstest.MapFile, data []byte) placedFile {
	own, _ := f.Sys.(header)
	return placedFile{data: data, mode: int64(f.Mode.Perm()), uid: own.uid, gid: own.gid}
}

// placementLayer packs the files sorted, with fixed times, after a folder
// entry (0755, root) for each parent the image lacks: the same inputs
// give the same layer, and a folder of the image keeps its metadata.
func placementLayer(files fstest.MapFS, out map[string]placedFile, lt types.MediaType) (v1.Layer, error) {
	dirs := map[string]bool{}
	for p := range out {
		for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
			if _, ok := files[d]; !ok {
				dirs[d] = true
			}
		}
	}
	names := make([]string, 0, len(out)+len(dirs))
	for p := range out {
		names = append(names, p)
	}
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		h := &tar.Header{Name: n + "/", Mode: 0o755, Typeflag: tar.TypeDir, ModTime: time.Unix(0, 0), Format: headerFormat(n)}
		f, isFile := out[n]
		if isFile {
			h = &tar.Header{Name: n, Mode: f.mode, Size: int64(len(f.data)), Uid: f.uid, Gid: f.gid,
				ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg, Format: headerFormat(n)}
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing /%s into the signed layer: %w", n, err)
		}
		if isFile {
			if _, err := tw.Write(f.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(buf.Bytes(), lt)
}

// headerFormat is USTAR where the name fits it, else GNU: no PAX path
// record, which some node versions' import mishandles.
func headerFormat(name string) tar.Format {
	if len(name)+1 <= 100 && isASCII(name) {
		return tar.FormatUSTAR
	}
	return tar.FormatGNU
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func bytesLayer(b []byte, lt types.MediaType) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }, tarball.WithMediaType(lt))
}

// withoutMoved returns src with every entry under the moved folders taken
// out of its layers. A layer without such entries is kept as it is (its
// blob stays shared with src); src itself when no layer has any. The
// config, history and manifest media types are src's.
func withoutMoved(src v1.Image, lt types.MediaType) (v1.Image, error) {
	layers, err := src.Layers()
	if err != nil {
		return nil, err
	}
	changed := false
	out := make([]v1.Layer, len(layers))
	for i, l := range layers {
		b, dropped, err := filterLayer(l)
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		out[i] = l
		if dropped {
			changed = true
			if out[i], err = bytesLayer(b, lt); err != nil {
				return nil, err
			}
		}
	}
	if !changed {
		return src, nil
	}
	cf, err := src.ConfigFile()
	if err != nil {
		return nil, err
	}
	mt, err := src.MediaType()
	if err != nil {
		return nil, err
	}
	m, err := src.Manifest()
	if err != nil {
		return nil, err
	}
	// A kept layer keeps its descriptor from src's manifest: what a layer
	// reports of itself depends on where src was read from (an OCI layout
	// may say Docker where the manifest says OCI), and the same image must
	// give the same result wherever it was read.
	adds := make([]mutate.Addendum, len(out))
	for i, l := range out {
		adds[i] = mutate.Addendum{Layer: l}
		if l == layers[i] && i < len(m.Layers) {
			d := m.Layers[i]
			adds[i] = mutate.Addendum{Layer: l, MediaType: d.MediaType, Annotations: d.Annotations, URLs: d.URLs}
		}
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, mt), m.Config.MediaType)
	if img, err = mutate.Append(img, adds...); err != nil {
		return nil, err
	}
	appended, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs = appended.RootFS.DiffIDs
	return mutate.ConfigFile(img, cf)
}

// filterLayer rewrites a layer without its entries under the moved
// folders (and without a folder entry for /opt itself; CoreOS's /opt link
// stays). dropped is false, and b nil, when there is none.
func filterLayer(l v1.Layer) (b []byte, dropped bool, err error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false, err
		}
		p := strings.TrimPrefix(path.Clean(strings.TrimPrefix(h.Name, "/")), "./")
		if isMoved(strings.TrimPrefix(p, ".wh.")) && !(p == "opt" && h.Typeflag == tar.TypeSymlink) && !isMovedRootDir(p) {
			dropped = true
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, false, err
		}
		if _, err := io.Copy(tw, tr); err != nil {
			return nil, false, err
		}
	}
	if !dropped {
		return nil, false, nil
	}
	if err := tw.Close(); err != nil {
		return nil, false, err
	}
	return buf.Bytes(), true, nil
}

// isMovedRootDir: /var/opt and /var/lib/firmware themselves stay (a base
// may own them; only what is in them moves); /opt goes.
func isMovedRootDir(p string) bool { return p == "var/opt" || p == "var/lib/firmware" }
