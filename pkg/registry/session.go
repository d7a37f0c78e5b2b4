package registry

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// A session lets the calls of one step share what does not change while it
// runs: the answer of each registry's /v2/ ping. go-containerregistry pings
// the registry on every call (Get, Head, Write each set up their own
// authenticated transport), which is one extra round trip per call; within
// a session a registry is pinged once. Tokens are still fetched per call,
// for the scopes of that call.
type session struct {
	mu    sync.Mutex
	pings map[string]*cachedPing // host → its /v2/ answer
}

type cachedPing struct {
	scheme string
	status int
	header http.Header
}

// WithSession returns r with a session shared by its copies: registry
// pings are answered once per host. r already in a session keeps it.
func (r Remote) WithSession() Remote {
	if r.session == nil {
		r.session = &session{pings: map[string]*cachedPing{}}
	}
	return r
}

// pingCache answers a repeated GET /v2/ from the session.
type pingCache struct {
	s    *session
	next http.RoundTripper
}

func (p *pingCache) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || strings.TrimSuffix(req.URL.Path, "/") != "/v2" || req.Header.Get("Authorization") != "" {
		return p.next.RoundTrip(req)
	}
	key := req.URL.Host
	p.s.mu.Lock()
	c := p.s.pings[key]
	p.s.mu.Unlock()
	// An insecure registry is pinged over https and http at once; the
	// scheme that answered first in this session is the one it speaks.
	if c != nil && c.scheme != req.URL.Scheme {
		return nil, fmt.Errorf("pinging %s over %s: it answered over %s earlier in this build", key, req.URL.Scheme, c.scheme)
	}
	if c != nil {
		return &http.Response{
			Status: http.StatusText(c.status), StatusCode: c.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: c.header.Clone(), Body: http.NoBody, Request: req,
		}, nil
	}
	resp, err := p.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	// Only the answers that say how to authenticate are kept: 200 (none
	// needed) and 401 with its challenge. Anything else is asked again.
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		resp.Body = http.NoBody
		p.s.mu.Lock()
		p.s.pings[key] = &cachedPing{scheme: req.URL.Scheme, status: resp.StatusCode, header: resp.Header.Clone()}
		p.s.mu.Unlock()
	}
	return resp, nil
}
