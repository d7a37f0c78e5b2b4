package imagebuild

import (
	"archive/tar"
	"bytes"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// Attacks on image-build's reading of the rendered config. Each must fail
// closed: no plan, so nothing is built or pushed, and an error naming the
// rendered config, the file and the reason.

func wantPlanRefused(t *testing.T, plan *Plan, err error, parts ...string) {
	t.Helper()
	if err == nil || plan != nil {
		t.Fatalf("planned (plan %v, error %v)", plan != nil, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error lacks %q: %v", p, err)
		}
	}
}

func TestPlanLayerRefusesOversizedRenderedConfig(t *testing.T) {
	pad := imagetest.DataURL(t, string(noiseBytes(ignres.MaxRenderedConfig)), false)
	mc := imagetest.RenderedMC(t, "rendered-worker-big", igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{
		{Node: igntypes.Node{Path: "/etc/big"}, FileEmbedded1: igntypes.FileEmbedded1{Contents: pad}},
	}}})
	plan, err := PlanLayer(mc)
	wantPlanRefused(t, plan, err, "rendered MachineConfig rendered-worker-big is too large", "limit 1572864 (etcd's request size)")
}

func TestPlanLayerRefusesDecompressionBomb(t *testing.T) {
	// 65 MiB of zeros in 65 KiB of gzip: one file over the content cap.
	mc := imagetest.RenderedMC(t, "rendered-worker-bomb", igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{
		{Node: igntypes.Node{Path: "/etc/bomb"}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{
			Source: imagetest.Ptr("data:;base64," + base64.StdEncoding.EncodeToString(env.GzipZeros(65))), Compression: imagetest.Ptr("gzip")}}},
	}}})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	plan, err := PlanLayer(mc)
	runtime.ReadMemStats(&after)
	wantPlanRefused(t, plan, err, "rendered-worker-bomb", "/etc/bomb", "more than 67108864 bytes after decompression")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
		t.Errorf("planning allocated %d MiB for a refused bomb", alloc>>20)
	}
}

func TestPlanLayerRefusesFilesInflatingPastTheCapTogether(t *testing.T) {
	var files []igntypes.File
	for _, p := range []string{"/etc/a", "/etc/b", "/etc/c", "/etc/d", "/etc/e"} {
		files = append(files, bombFile(p, 15)) // 75 MiB in all
	}
	plan, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-many", igntypes.Config{Storage: igntypes.Storage{Files: files}}))
	wantPlanRefused(t, plan, err, "rendered-worker-many", "/etc/e", "more than 67108864 bytes after decompression")
}

func TestPlanLayerRefusesZeroHashOnDataURL(t *testing.T) {
	for _, gz := range []bool{false, true} {
		f := imagetest.File(t, "/etc/foo", "payload\n", 0o644, gz)
		f.Contents.Verification.Hash = imagetest.Ptr("sha512-" + strings.Repeat("0", 128))
		plan, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-zero", igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{f}}}))
		wantPlanRefused(t, plan, err, "rendered-worker-zero", "/etc/foo", "verification.hash mismatch")
	}
}

func TestPlanLayerWritesDecompressedVerifiedContent(t *testing.T) {
	content := strings.Repeat("verified content\n", 100)
	f := imagetest.File(t, "/etc/foo", content, 0o600, true)
	f.Contents.Verification.Hash = imagetest.Ptr(sha512Of([]byte(content)))
	plan, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-ok", igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{f}}}))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := plan.Tar()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("etc/foo not in the layer: %v", err)
		}
		if h.Name == "etc/foo" {
			got, _ := io.ReadAll(tr)
			if string(got) != content || h.Size != int64(len(content)) || h.Mode != 0o600 {
				t.Fatalf("etc/foo: %d bytes, mode %o", len(got), h.Mode)
			}
			return
		}
	}
}

func sha512Of(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + hex.EncodeToString(s[:])
}

// TestReadRenderedRefusesOversizedFile writes a rendered.json larger than
// any config render can write and checks it is refused before it is
// decoded, naming the limit.
func TestReadRenderedRefusesOversizedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rendered.json")
	big := `{"kind":"MachineConfig","metadata":{"name":"rendered-worker-1"},"spec":{"kernelArguments":["` +
		strings.Repeat("a", maxRenderedFile) + `"]}}`
	if err := os.WriteFile(p, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadRendered(p)
	if err == nil || !strings.Contains(err.Error(), "over 6291456 bytes") {
		t.Fatalf("error %v, want a refusal naming the 6291456-byte limit", err)
	}
}
