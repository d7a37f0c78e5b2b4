package render

import (
	"context"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/peakrss"
)

func sha512Hex(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + hex.EncodeToString(s[:])
}

func workerPool() *mcfgv1.MachineConfigPool {
	return &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcrender.RoleLabel: "worker"}}}}
}

func workerMC(name, raw string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcrender.RoleLabel: "worker"}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}}}
}

// worstCaseRequest is the largest input render accepts, all of it served
// over HTTP: a gzip referenced config of about 1 MiB (incompressible, so it
// fills most of the rendered config), a 16 MiB uncompressed file (the
// fetch cap) and three gzip files of 15 MiB each once inflated: 62 MiB of
// content, just under ignres.MaxContent, with every hash right.
func worstCaseRequest(tb testing.TB) (mcrender.Request, func()) {
	pad := base64.StdEncoding.EncodeToString(noise(750 << 10))
	ref := []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/kiln/ref-pad","mode":420,"contents":{"source":"data:;base64,` + pad + `"}}]}}`)
	bomb := env.GzipZeros(15)
	files := map[string][]byte{"ref.ign.gz": gz(ref), "zeros16": make([]byte, 16<<20), "bomb": bomb}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, ok := files[strings.TrimPrefix(req.URL.Path, "/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	var fs []string
	fs = append(fs, fmt.Sprintf(`{"path":"/etc/kiln/zeros16","mode":420,"contents":{"source":"%s/zeros16","verification":{"hash":"%s"}}}`, srv.URL, env.SHA512Zeros(16<<20)))
	for i := 0; i < 3; i++ {
		fs = append(fs, fmt.Sprintf(`{"path":"/etc/kiln/bomb%d","mode":420,"contents":{"source":"%s/bomb","compression":"gzip","verification":{"hash":"%s"}}}`, i, srv.URL, env.SHA512Zeros(15<<20)))
	}
	raw := fmt.Sprintf(`{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"%s/ref.ign.gz","compression":"gzip","verification":{"hash":"%s"}}]}},"storage":{"files":[%s]}}`,
		srv.URL, sha512Hex(ref), strings.Join(fs, ","))
	req := mcrender.Request{Pool: workerPool(), Configs: []*mcfgv1.MachineConfig{workerMC("50-worst", raw)}, Sources: &Fetcher{}}
	return req, srv.Close
}

func trivialRequest() mcrender.Request {
	raw := `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/kiln/hello","mode":420,"contents":{"source":"data:,hello"}}]}}`
	return mcrender.Request{Pool: workerPool(), Configs: []*mcfgv1.MachineConfig{workerMC("50-trivial", raw)}, Sources: &Fetcher{Client: closedClient}}
}

// BenchmarkRenderPeakRSS renders the worst-case accepted input
// (worstCaseRequest) in a fresh process and reports its peak RSS, and the
// ratio against a fresh process rendering a one-file config, measured in
// the same loop, alternating with it (peakrss.Compare). It fails above
// 256 MiB.
func BenchmarkRenderPeakRSS(b *testing.B) {
	if w := peakrss.Workload(); w != "" {
		req, done := trivialRequest(), func() {}
		if w == "worst" {
			req, done = worstCaseRequest(b)
		}
		defer done()
		res, err := mcrender.Render(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if w == "worst" && len(res.Config.Spec.Config.Raw) < 1<<20 {
			b.Fatalf("worst case rendered to only %d bytes", len(res.Config.Spec.Config.Raw))
		}
		peakrss.Report()
		return
	}
	peakrss.Compare(b, "trivial", "worst", 256, "render of the worst-case input")
}

// shapeWorkload runs one workload of the shape benchmarks in the child:
// "bomb" renders the nested-key bomb (three unknown keys nested 9,000
// deep), which must be refused; "widest" renders widestConfig, the
// costliest config the shape caps accept, which must render; anything else
// the one-file reference.
func shapeWorkload(b *testing.B, w string) {
	req := trivialRequest()
	switch w {
	case "bomb":
		req.Configs = []*mcfgv1.MachineConfig{workerMC("50-bomb", env.NestedKeyBomb(3, 9000))}
	case "widest":
		req.Configs = []*mcfgv1.MachineConfig{workerMC("50-widest", widestConfig())}
	}
	_, err := mcrender.Render(context.Background(), req)
	if (w == "bomb") != (err != nil) {
		b.Fatalf("workload %s: render returned %v", w, err)
	}
	peakrss.Report()
}

// BenchmarkRenderNestedKeyBombPeakRSS reports the peak RSS of a fresh
// process rendering the nested-key bomb against one rendering a one-file
// config, in the same loop; it fails at 256 MiB. Before the shape check
// render accepted the bomb, and Ignition's parser held a node for each of
// its 27,000 levels.
func BenchmarkRenderNestedKeyBombPeakRSS(b *testing.B) {
	if w := peakrss.Workload(); w != "" {
		shapeWorkload(b, w)
		return
	}
	peakrss.Compare(b, "trivial", "bomb", 256, "render of the nested-key bomb")
}

// BenchmarkRenderWidestConfigPeakRSS is the same for widestConfig, the
// most Ignition's parser is given to hold: the shape caps are what keep it
// under 256 MiB.
func BenchmarkRenderWidestConfigPeakRSS(b *testing.B) {
	if w := peakrss.Workload(); w != "" {
		shapeWorkload(b, w)
		return
	}
	peakrss.Compare(b, "trivial", "widest", 256, "render of the widest accepted config")
}
