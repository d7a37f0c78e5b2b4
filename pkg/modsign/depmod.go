package modsign

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/layers"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// DefaultDepmod is kmod's depmod, found on PATH (Debian's kmod package in
// the steps image).
const DefaultDepmod = "depmod"

// kernelTreeLimit caps what kiln copies of a kernel's modules folder to
// run depmod on: RHCOS's is a few hundred MB.
const kernelTreeLimit = 4 << 30

// depmodInputs are files of a kernel's folder that depmod reads and never
// writes: kiln keeps the image's copies.
var depmodInputs = map[string]bool{"modules.order": true, "modules.builtin": true, "modules.builtin.modinfo": true}

// runDepmod runs depmod for kver over the image's /usr/lib/modules/<kver>
// with the placed modules added, and returns the files depmod wrote or
// changed there (paths relative to the image root). depmod runs with an
// empty configuration folder (-C), so no host's depmod.d changes the
// result: the same image and modules give the same files.
func runDepmod(bin string, src v1.Image, kver string, placed map[string][]byte) (map[string][]byte, error) {
	if bin == "" {
		bin = DefaultDepmod
	}
	exe, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("running depmod for kernel %s: %w (Debian's kmod package has it)", kver, err)
	}
	tmp, err := os.MkdirTemp("", "kiln-depmod-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// kmod's depmod reads <base>/lib/modules/<kver>; the image's
	// /usr/lib/modules is the same folder behind CoreOS's /lib link.
	kdir := filepath.Join(tmp, "lib", "modules", kver)
	if err := extractKernelTree(src, kver, kdir); err != nil {
		return nil, fmt.Errorf("running depmod for kernel %s: reading the image's /%s%s: %w", kver, ModulesDir, kver, err)
	}
	for p, data := range placed {
		rel := strings.TrimPrefix(p, ModulesDir+kver+"/")
		dst := filepath.Join(kdir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return nil, err
		}
	}
	before, err := depmodFiles(kdir)
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(tmp, "depmod.d")
	if err := os.Mkdir(conf, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-b", tmp, "-C", conf, kver)
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("running depmod for kernel %s: %w: %s", kver, err, termsafe.Escape(strings.TrimSpace(stderr.String())))
	}
	after, err := depmodFiles(kdir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for name, data := range after {
		if old, ok := before[name]; (!ok || !bytes.Equal(old, data)) && !depmodInputs[name] {
			out[ModulesDir+kver+"/"+name] = data
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("running depmod for kernel %s: it wrote no modules.* file", kver)
	}
	return out, nil
}

// depmodFiles reads the modules.* files at the top of a kernel's folder.
func depmodFiles(kdir string) (map[string][]byte, error) {
	ents, err := os.ReadDir(kdir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), "modules.") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(kdir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}

// extractKernelTree writes the regular files and folders of the image's
// /usr/lib/modules/<kver>/ into dir, as the flattened image has them.
// Links (build, source) are skipped: depmod needs none, and with no link
// in dir every write stays inside it.
func extractKernelTree(img v1.Image, kver, dir string) error {
	prefix := ModulesDir + kver + "/"
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var total int64
	return layers.Walk(img, func(p string, h *tar.Header, r io.Reader) error {
		rel, ok := strings.CutPrefix(p, prefix)
		if !ok || rel == "" {
			return nil
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			return os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
		default:
			return nil
		}
		total += h.Size
		if h.Size > modulesIndexLimit || total > kernelTreeLimit {
			return fmt.Errorf("%s: over kiln's limit (%d bytes a file, %d in all)", termsafe.Escape(h.Name), int64(modulesIndexLimit), int64(kernelTreeLimit))
		}
		// Layers come top first, so a folder's entry may follow its files;
		// the same path twice is one layer's later entry winning.
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, io.LimitReader(r, h.Size))
		return errors.Join(err, f.Close())
	})
}

// PlacedModules lists the module files under /usr/lib/modules/<kver>/extra/
// in an image's final filesystem, sorted: where kmod-sign put the day-0
// modules, for a check of what a node boots.
func PlacedModules(img v1.Image, kver string) ([]string, error) {
	files, err := imageFiles(img)
	if err != nil {
		return nil, fmt.Errorf("listing placed modules: %w", err)
	}
	prefix := ModulesDir + kver + "/" + ExtraDir + "/"
	var out []string
	for p, f := range files {
		if strings.HasPrefix(p, prefix) && f.Mode.IsRegular() && isModule(p) {
			out = append(out, "/"+p)
		}
	}
	sort.Strings(out)
	return out, nil
}
