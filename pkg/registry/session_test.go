package registry

import (
	"context"
	"testing"
)

// TestSessionPingsEachRegistryOnce counts the /v2/ pings of three calls:
// one per call without a session, one in all within a session.
func TestSessionPingsEachRegistryOnce(t *testing.T) {
	for _, c := range []struct {
		name    string
		session bool
		want    int
	}{
		{name: "no session", want: 3},
		{name: "session", session: true, want: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg := startLoggingRegistry(t)
			ref := pushedBase(t, reg.host()+"/base/os:1", 1)
			reg.mu.Lock()
			reg.reqs = nil
			reg.mu.Unlock()
			r := Remote{Insecure: []string{reg.host()}}
			if c.session {
				r = r.WithSession()
			}
			ctx := context.Background()
			if _, err := r.Get(ctx, ref); err != nil {
				t.Fatal(err)
			}
			if _, err := r.HeadNamed(ctx, ref); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Head(ctx, ref); err != nil {
				t.Fatal(err)
			}
			if n := reg.count("GET", "/v2/?"); n != c.want {
				t.Errorf("%d pings, want %d", n, c.want)
			}
		})
	}
}
