package sign

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// A registry that does not answer gives no policy verdict: VerifyPolicy's
// error then does not wrap ErrPolicy (so verify exits 1, not 3) and is a
// fault. The image's manifest is served by a real registry; only the
// failing request is answered with an error status.
func TestVerifyPolicyRegistryFaultIsNoVerdict(t *testing.T) {
	real := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(real.Close)
	host := strings.TrimPrefix(real.URL, "http://")
	image := pushImage(t, host, "kiln/os:v1")
	keys := newKeys(t, "pw")

	// failing serves the real registry except for requests whose path
	// contains part, answered with status.
	failing := func(part string, status int) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, part) {
				http.Error(w, http.StatusText(status), status)
				return
			}
			r.URL.Scheme, r.URL.Host, r.RequestURI = "http", host, ""
			resp, err := http.DefaultTransport.RoundTrip(r)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			for k, v := range resp.Header {
				w.Header()[k] = v
			}
			w.WriteHeader(resp.StatusCode)
			_, _ = io.Copy(w, resp.Body)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := l.Addr().String()
	l.Close()

	digest := image[strings.Index(image, "@"):]
	type verdict struct {
		Policy, Fault bool
		Says          string
	}
	cases := []struct {
		name, host string
		want       verdict
	}{
		{"stopped registry", stopped, verdict{false, true, "registry unreachable"}},
		{"manifest 500", failing("/manifests/", 500), verdict{false, true, "reading the image"}},
		{"manifest 401", failing("/manifests/", 401), verdict{false, true, "registry authentication failed"}},
		{"signature 500", failing(".sig", 500), verdict{false, true, "reading its signatures"}},
		{"unsigned", host, verdict{true, false, "no sigstore signature"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := VerifyPolicy(context.Background(), PolicyInput{Image: c.host + "/kiln/os" + digest,
				KeyPath: keys.pubPath, Insecure: true, OutDir: t.TempDir()})
			if err == nil {
				t.Fatal("VerifyPolicy passed")
			}
			got := verdict{errors.Is(err, ErrPolicy), exitcode.IsFault(err), c.want.Says}
			if !strings.Contains(err.Error(), c.want.Says) {
				got.Says = err.Error()
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if c.want.Fault && exitcode.CodeOf(exitcode.Refused(err)) != exitcode.ExitFailure {
				t.Errorf("a fault marked Refused exits %d, want 1", exitcode.CodeOf(exitcode.Refused(err)))
			}
		})
	}
}
