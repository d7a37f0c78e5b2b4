package modsign

import (
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kiln-dev/kiln/test/env"
)

// TestImageFilesHonoursOpaqueFolders: an opaque whiteout in an upper layer
// hides everything a lower layer had in that folder, keeps what the same
// layer brings, and is itself no file of the image.
func TestImageFilesHonoursOpaqueFolders(t *testing.T) {
	img := imageOfLayers(t,
		map[string][]byte{"dir/": nil, "dir/a": []byte("a"), "keep": []byte("k")},
		map[string][]byte{"dir/.wh..wh..opq": nil, "dir/b": []byte("b")},
	)
	files, err := imageFiles(img)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range files {
		got = append(got, p)
	}
	sort.Strings(got)
	if diff := cmp.Diff([]string{"dir", "dir/b", "keep"}, got); diff != "" {
		t.Errorf("imageFiles (-want +got):\n%s", diff)
	}
}

// TestExtractKernelTreeHonoursOpaqueFolders: depmod's copy of the kernel
// folder has only what the flattened image has, under an opaque folder.
func TestExtractKernelTreeHonoursOpaqueFolders(t *testing.T) {
	const k = "usr/lib/modules/6.1.0-56-amd64/"
	img := imageOfLayers(t,
		map[string][]byte{k + "kernel/old.ko": []byte("old"), k + "modules.dep": []byte("old")},
		map[string][]byte{k + "kernel/.wh..wh..opq": nil, k + "kernel/new.ko": []byte("new")},
	)
	dir := t.TempDir()
	if err := extractKernelTree(img, "6.1.0-56-amd64", dir); err != nil {
		t.Fatal(err)
	}
	got := listTree(t, dir)
	if diff := cmp.Diff([]string{"kernel", "kernel/new.ko", "modules.dep"}, got); diff != "" {
		t.Errorf("extracted tree (-want +got):\n%s", diff)
	}
}

func imageOfLayers(t *testing.T, layers ...map[string][]byte) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, l := range layers {
		ls = append(ls, env.TarLayer(t, l))
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
