package render

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/test/env"
)

// Attacks on render's handling of Ignition sources. Each must fail closed:
// no rendered config, an error naming the MachineConfig, the field and the
// reason.

func renderOne(t *testing.T, raw string) (*mcrender.Result, error) {
	t.Helper()
	return mcrender.Render(context.Background(), mcrender.Request{Pool: workerPool(), Configs: []*mcfgv1.MachineConfig{workerMC("50-attack", raw)}, Sources: testFetcher()})
}

func wantRefused(t *testing.T, res *mcrender.Result, err error, parts ...string) {
	t.Helper()
	if err == nil || res != nil {
		t.Fatalf("accepted (result %v, error %v)", res != nil, err)
	}
	for _, p := range append([]string{`MachineConfig "50-attack"`}, parts...) {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error lacks %q: %v", p, err)
		}
	}
}

// serve is an HTTP server for one attack's payloads; sent counts the bytes
// it wrote.
func serve(t *testing.T, files map[string][]byte) (*httptest.Server, *atomic.Int64) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, ok := files[strings.TrimPrefix(req.URL.Path, "/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		n, _ := w.Write(b)
		sent.Add(int64(n))
	}))
	t.Cleanup(srv.Close)
	return srv, &sent
}

func TestRenderRefusesZeroHashOnDataURL(t *testing.T) {
	for _, where := range []string{"contents", "append"} {
		t.Run(where, func(t *testing.T) {
			res := `{"source":"data:,payload","verification":{"hash":"sha512-` + strings.Repeat("0", 128) + `"}}`
			field := `"contents":` + res
			if where == "append" {
				field = `"append":[` + res + `]`
			}
			r, err := renderOne(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/foo","mode":420,`+field+`}]}}`)
			wantRefused(t, r, err, "spec.config.storage.files[0] (/etc/foo) "+where, "verification.hash mismatch", strings.Repeat("0", 128))
		})
	}
}

func TestRenderRefusesZeroHashOnDataConfigReference(t *testing.T) {
	ref := base64.StdEncoding.EncodeToString([]byte(`{"ignition":{"version":"3.5.0"}}`))
	r, err := renderOne(t, `{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"data:;base64,`+ref+`","verification":{"hash":"sha256-`+strings.Repeat("0", 64)+`"}}]}}}`)
	wantRefused(t, r, err, "spec.config.ignition.config.merge[0]", "verification.hash mismatch")
}

func TestRenderChecksCompressedSourceHashOverDecompressedBytes(t *testing.T) {
	content := []byte(strings.Repeat("compressed remote content\n", 40))
	packed := gz(content)
	srv, _ := serve(t, map[string][]byte{"f.gz": packed})
	file := func(hash string) string {
		return fmt.Sprintf(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/foo","mode":420,"contents":{"source":"%s/f.gz","compression":"gzip","verification":{"hash":"%s"}}}]}}`, srv.URL, hash)
	}
	if _, err := renderOne(t, file(sha512Hex(content))); err != nil {
		t.Fatalf("hash over the decompressed content (what Ignition checks) refused: %v", err)
	}
	r, err := renderOne(t, file(sha512Hex(packed)))
	wantRefused(t, r, err, "spec.config.storage.files[0] (/etc/foo) contents", "sha512 of the decompressed content")
}

func TestRenderRefusesDecompressionBombAsRemoteMergeSource(t *testing.T) {
	bomb := env.GzipZeros(1024) // 1 GiB of zeros in about 1 MiB of gzip
	srv, sent := serve(t, map[string][]byte{"bomb.ign.gz": bomb})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := renderOne(t, `{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"`+srv.URL+`/bomb.ign.gz","compression":"gzip"}]}}}`)
	runtime.ReadMemStats(&after)
	wantRefused(t, r, err, "spec.config.ignition.config.merge[0]", srv.URL+"/bomb.ign.gz", "more than 1572864 bytes after decompression")
	// Refused before it was inflated: a full inflation would allocate 1 GiB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("render allocated %d MiB for a refused bomb", alloc>>20)
	}
	if sent.Load() > 16<<20 {
		t.Errorf("server sent %d bytes", sent.Load())
	}
}

func TestRenderRefusesDecompressionBombAsDataFile(t *testing.T) {
	src := "data:;base64," + base64.StdEncoding.EncodeToString(env.GzipZeros(65))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r, err := renderOne(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/bomb","mode":420,"contents":{"source":"`+src+`","compression":"gzip"}}]}}`)
	runtime.ReadMemStats(&after)
	wantRefused(t, r, err, "storage.files[0] (/etc/bomb) contents", "more than 67108864 bytes after decompression")
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("render allocated %d MiB for a refused bomb", alloc>>20)
	}
}

func TestRenderRefusesManySourcesInflatingPastTheBudget(t *testing.T) {
	bomb := env.GzipZeros(15)
	srv, _ := serve(t, map[string][]byte{"b": bomb})
	var fs []string
	sum := env.SHA512Zeros(15 << 20)
	for i := 0; i < 5; i++ { // 75 MiB in all, each one under the limit
		fs = append(fs, fmt.Sprintf(`{"path":"/etc/b%d","mode":420,"contents":{"source":"%s/b","compression":"gzip","verification":{"hash":"%s"}}}`, i, srv.URL, sum))
	}
	r, err := renderOne(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[`+strings.Join(fs, ",")+`]}}`)
	wantRefused(t, r, err, "spec.config.storage.files[4] (/etc/b4) contents", "more than 67108864 bytes after decompression")
}
