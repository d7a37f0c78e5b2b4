package imagebuild

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
	"github.com/kiln-dev/kiln/test/peakrss"
)

// noiseBytes is deterministic incompressible bytes: a SHA-256 chain.
func noiseBytes(n int) []byte {
	out := make([]byte, 0, n+32)
	sum := sha256.Sum256([]byte("kiln"))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// bombFile is a gzip data: file of mib MiB of zeros with its right hash.
func bombFile(path string, mib int) igntypes.File {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(env.GzipZeros(mib))
	return igntypes.File{Node: igntypes.Node{Path: path}, FileEmbedded1: igntypes.FileEmbedded1{
		Mode: imagetest.Ptr(0o644),
		Contents: igntypes.Resource{Source: &src, Compression: imagetest.Ptr("gzip"),
			Verification: igntypes.Verification{Hash: imagetest.Ptr(env.SHA512Zeros(mib << 20))}},
	}}
}

// worstRenderedConfig is the largest rendered config image-build accepts:
// just under the 1,572,864-byte cap, four gzip files of 15 MiB each once
// inflated and an incompressible file filling the rest: about 61 MiB of
// content, just under ignres.MaxContent.
func worstRenderedConfig(tb testing.TB) *mcfgv1.MachineConfig {
	var cfg igntypes.Config
	for i := 0; i < 4; i++ {
		cfg.Storage.Files = append(cfg.Storage.Files, bombFile(fmt.Sprintf("/etc/kiln/bomb%d", i), 15))
	}
	base := len(imagetest.RenderedMC(tb, "rendered-worker-worst", cfg).Spec.Config.Raw)
	room := ignres.MaxRenderedConfig - base - 200
	pad := imagetest.DataURL(tb, string(noiseBytes(room/4*3)), false)
	cfg.Storage.Files = append(cfg.Storage.Files, igntypes.File{Node: igntypes.Node{Path: "/etc/kiln/pad"}, FileEmbedded1: igntypes.FileEmbedded1{Contents: pad, Mode: imagetest.Ptr(0o644)}})
	mc := imagetest.RenderedMC(tb, "rendered-worker-worst", cfg)
	if n := len(mc.Spec.Config.Raw); n > ignres.MaxRenderedConfig || n < ignres.MaxRenderedConfig-64<<10 {
		tb.Fatalf("worst-case config is %d bytes, want just under %d", n, ignres.MaxRenderedConfig)
	}
	return mc
}

// planAndLayer is image-build's work before the push: plan, tar, append
// the layer to a base and read the compressed layer once, as a push does.
func planAndLayer(tb testing.TB, mc *mcfgv1.MachineConfig) {
	plan, err := PlanLayer(mc)
	if err != nil {
		tb.Fatal(err)
	}
	tarBytes, err := plan.Tar()
	if err != nil {
		tb.Fatal(err)
	}
	img, err := imageMeta{layer: tarBytes, history: "bench"}.image(empty.Image)
	if err != nil {
		tb.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		tb.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Compressed()
	if err != nil {
		tb.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.Copy(io.Discard, rc); err != nil {
		tb.Fatal(err)
	}
	if _, err := img.Digest(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkImageLayerPeakRSS plans and builds the layer of a 1.5 MiB
// rendered config holding ~61 MiB of content in a fresh process and
// reports its peak RSS, and the ratio against a fresh process doing the
// same for the small sample config, measured in the same loop,
// alternating with it (peakrss.Compare). It fails above 256 MiB.
func BenchmarkImageLayerPeakRSS(b *testing.B) {
	if w := peakrss.Workload(); w != "" {
		mc := imagetest.RenderedMC(b, "rendered-worker-sample", imagetest.SampleConfig(b, "hello\n"))
		if w == "worst" {
			mc = worstRenderedConfig(b)
		}
		planAndLayer(b, mc)
		peakrss.Report()
		return
	}
	peakrss.Compare(b, "sample", "worst", 256, "image-build planning and layer of a 1.5 MiB rendered config")
}
