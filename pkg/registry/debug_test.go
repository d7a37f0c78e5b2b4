package registry

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// With debug output on, each registry request prints one line: method,
// URL without its query or credentials, status and time. A redirect's
// signed query (a credential) and the Authorization header never show;
// with it off nothing is printed.
func TestDebugOutputOneLinePerRequestWithoutSecrets(t *testing.T) {
	const secret = "X-Amz-Signature=s3cr3t"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case strings.Contains(r.URL.Path, "/manifests/"):
			http.Redirect(w, r, "/signed/manifest?"+secret, http.StatusTemporaryRedirect)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	r := Remote{Insecure: []string{host}, Backoff: remote.Backoff{Steps: 1}}
	ref, err := r.ParseRef(host + "/kiln/os@sha256:" + strings.Repeat("a", 64))
	if err != nil {
		t.Fatal(err)
	}
	get := func() { _, _ = r.Get(context.Background(), ref) }

	var log bytes.Buffer
	SetDebugOutput(&log)
	get()
	SetDebugOutput(nil)

	var got []string
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		// The time taken varies: keep what comes before it.
		got = append(got, l[:strings.LastIndex(l, " (")])
	}
	want := []string{
		// go-containerregistry pings an insecure registry over TLS first.
		"registry: GET https://" + host + "/v2/: error: tls: first record does not look like a TLS handshake",
		"registry: GET " + srv.URL + "/v2/: 200 OK",
		"registry: GET " + srv.URL + "/v2/kiln/os/manifests/sha256:" + strings.Repeat("a", 64) + ": 307 Temporary Redirect",
		"registry: GET " + srv.URL + "/signed/manifest: 404 Not Found",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("debug lines (-want +got):\n%s\nall:\n%s", diff, log.String())
	}
	if strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("the redirect's signed query was printed:\n%s", log.String())
	}

	log.Reset()
	get()
	if log.Len() != 0 {
		t.Errorf("debug output off, yet printed:\n%s", log.String())
	}
}
