package sign

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// TestSignGivesUpWhenAnotherWriterAlwaysWins: a registry that answers
// every write of the .sig tag but keeps none (as if another writer
// replaced it each time) gets exactly publishAttempts tries, and Sign
// fails saying so.
func TestSignGivesUpWhenAnotherWriterAlwaysWins(t *testing.T) {
	var sigPuts atomic.Int64
	inner := ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") && strings.HasSuffix(r.URL.Path, ".sig") {
			sigPuts.Add(1)
			b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			w.Header().Set("Docker-Content-Digest", fmt.Sprintf("sha256:%x", sha256.Sum256(b)))
			w.WriteHeader(http.StatusCreated) // accepted, and lost
			return
		}
		inner.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	image := pushImage(t, host, "kiln/os:v1")
	k := newKeys(t, "pw")
	r := registry.Remote{Insecure: []string{host}}
	_, err := Sign(context.Background(), r, SignInput{Image: image, Key: k.priv, Password: k.pass, Inputs: testInputs(t, host)})
	want := fmt.Sprintf("another writer replaced the .sig or .att tag %d times", publishAttempts)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Sign = %v, want an error with %q", err, want)
	}
	if got := sigPuts.Load(); got != publishAttempts {
		t.Errorf("%d writes of the .sig tag, want %d", got, publishAttempts)
	}
}
