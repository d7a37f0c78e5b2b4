package render

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// remote is the httptest server (loopback) behind every remote-source case.
type remote struct {
	*httptest.Server
	files map[string][]byte
}

// noise is deterministic incompressible bytes: a SHA-256 chain.
func noise(n int) []byte {
	out := make([]byte, 0, n+32)
	sum := sha256.Sum256([]byte("kiln"))
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

func newRemote(t testing.TB) *remote {
	t.Helper()
	var big strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&big, "line %d: some repetitive configuration text\n", i)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte("hello world\n"))
	w.Close()
	r := &remote{files: map[string][]byte{
		"big.conf":     []byte(big.String()),
		"random.bin":   noise(512),
		"hello.gz":     gz.Bytes(),
		"hello.txt":    []byte("hello from the remote server\n"),
		"huge.bin":     noise(1300 << 10),
		"toolarge.bin": noise(3 << 20),
	}}
	var flaky atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/files/{name}", func(w http.ResponseWriter, req *http.Request) {
		b, ok := r.files[req.PathValue("name")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	})
	mux.HandleFunc("/configs/{name}", func(w http.ResponseWriter, req *http.Request) {
		b, err := os.ReadFile(filepath.Join("testdata", "remote", req.PathValue("name")))
		if err != nil {
			http.NotFound(w, req)
			return
		}
		w.Write(bytes.ReplaceAll(b, []byte("{{URL}}"), []byte("http://"+req.Host)))
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, req *http.Request) {
		if flaky.Add(1)%2 == 1 {
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("flaky but fine\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, req *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	r.Server = httptest.NewServer(mux)
	t.Cleanup(r.Close)
	return r
}

// expand replaces {{URL}} and {{SHA512:name}} in case files.
func (r *remote) expand(b []byte) []byte {
	b = bytes.ReplaceAll(b, []byte("{{URL}}"), []byte(r.URL))
	b = bytes.ReplaceAll(b, []byte("{{HOSTPORT}}"), []byte(strings.TrimPrefix(r.URL, "http://")))
	for name, content := range r.files {
		sum := sha512.Sum512(content)
		b = bytes.ReplaceAll(b, []byte("{{SHA512:"+name+"}}"), []byte("sha512-"+hex.EncodeToString(sum[:])))
	}
	return b
}

// testFetcher keeps the failure cases fast.
func testFetcher() *Fetcher {
	return &Fetcher{Timeout: 300 * time.Millisecond, Attempts: 2, Backoff: 5 * time.Millisecond, MaxBytes: 2 << 20}
}
