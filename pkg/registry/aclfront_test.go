package registry_test

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/kiln-dev/kiln/test/env"
)

// aclFront stands in front of a real docker-registry (htpasswd, plain
// HTTP) and adds what htpasswd lacks: access per repository, with basic
// auth or with the token flow of the distribution spec
// (https://distribution.github.io/distribution/spec/auth/token/). It
// records, for every request, the repository, the mount source and the
// user whose credential the request carried, and for every token request
// the user and the scopes asked. htpasswd lets any listed user read and
// write every repository, so only such a front can tell whether each
// request carried the credential of its own repository.
type aclFront struct {
	url     string // http://host:port
	host    string
	backend *env.Registry
	users   map[string]string   // user → password, the backend's htpasswd too
	acl     map[string][]string // repository → users that may pull and push it; nil: every user everywhere
	bearer  bool

	mu        sync.Mutex
	reqs      []frontReq
	tokenReqs []tokenReq
	tokens    map[string]grant
}

type frontReq struct {
	Method, Repo, From, User string
	Status                   int
}

type tokenReq struct {
	User   string
	Scopes []string
}

// grant is what a token allows: repository → actions.
type grant struct {
	user    string
	actions map[string][]string
}

func startACLFront(t *testing.T, users map[string]string, acl map[string][]string, bearer bool) *aclFront {
	t.Helper()
	f := &aclFront{
		backend: env.StartRegistry(t, env.RegistryOptions{Users: users}),
		users:   users, acl: acl, bearer: bearer, tokens: map[string]grant{},
	}
	target := &url.URL{Scheme: "http", Host: f.backend.Host}
	proxy := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		// The registry writes upload locations with the Host it was
		// asked at: keep them pointing at the front.
		r.Out.Host = r.In.Host
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.serve(w, r, proxy)
	}))
	t.Cleanup(srv.Close)
	f.url, f.host = srv.URL, strings.TrimPrefix(srv.URL, "http://")
	return f
}

var repoPath = regexp.MustCompile(`^/v2/(.+?)/(blobs|manifests|tags)/`)

func (f *aclFront) serve(w http.ResponseWriter, r *http.Request, next http.Handler) {
	if r.URL.Path == "/token" {
		f.token(w, r)
		return
	}
	m := repoPath.FindStringSubmatch(r.URL.Path)
	if m == nil { // the /v2/ ping
		if f.bearer {
			f.challenge(w, "", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
		return
	}
	repo, from := m[1], r.URL.Query().Get("from")
	user, allowed := f.authorize(r, repo, from)
	status := 0
	defer func() {
		f.mu.Lock()
		f.reqs = append(f.reqs, frontReq{Method: r.Method, Repo: repo, From: from, User: user, Status: status})
		f.mu.Unlock()
	}()
	switch {
	case !allowed && f.bearer:
		status = http.StatusUnauthorized
		f.challenge(w, scopeFor(repo, r.Method), status)
		return
	case !allowed:
		status = http.StatusForbidden
		denied(w, status, "DENIED")
		return
	}
	if f.bearer { // the backend knows users, not tokens
		r.Header.Del("Authorization")
		r.SetBasicAuth(user, f.users[user])
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	next.ServeHTTP(rec, r)
	status = rec.status
}

// authorize returns the user r authenticates as and whether that user may
// do r's method on repo (push for a write) and pull from, a mount source.
// With basic auth, a request without a valid password goes on to the
// registry, which refuses it as it would without the front.
func (f *aclFront) authorize(r *http.Request, repo, from string) (string, bool) {
	action := "pull"
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		action = "push"
	}
	if f.bearer {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		f.mu.Lock()
		g, ok := f.tokens[tok]
		f.mu.Unlock()
		if !ok {
			return "", false
		}
		return g.user, slices.Contains(g.actions[repo], action) && (from == "" || slices.Contains(g.actions[from], "pull"))
	}
	user, pass, ok := r.BasicAuth()
	if !ok || f.users[user] != pass {
		return user, true // docker-registry's htpasswd answers it: 401
	}
	return user, f.may(user, repo) && (from == "" || f.may(user, from))
}

func (f *aclFront) may(user, repo string) bool {
	return f.acl == nil || slices.Contains(f.acl[repo], user)
}

// token answers GET /token?scope=…&service=… with basic auth, granting of
// each scope what the user may do there (the distribution spec: a token
// server grants the subset it allows).
func (f *aclFront) token(w http.ResponseWriter, r *http.Request) {
	user, pass, ok := r.BasicAuth()
	if !ok || f.users[user] != pass {
		denied(w, http.StatusUnauthorized, "UNAUTHORIZED")
		return
	}
	scopes := r.URL.Query()["scope"]
	g := grant{user: user, actions: map[string][]string{}}
	for _, s := range scopes {
		parts := strings.Split(s, ":")
		if len(parts) == 3 && parts[0] == "repository" && f.may(user, parts[1]) {
			g.actions[parts[1]] = strings.Split(parts[2], ",")
		}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	tok := hex.EncodeToString(b)
	f.mu.Lock()
	f.tokens[tok] = g
	f.tokenReqs = append(f.tokenReqs, tokenReq{User: user, Scopes: scopes})
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"token":%q}`, tok)
}

func (f *aclFront) challenge(w http.ResponseWriter, scope string, status int) {
	c := fmt.Sprintf(`Bearer realm="%s/token",service="front"`, f.url)
	if scope != "" {
		c += fmt.Sprintf(`,scope="%s"`, scope)
	}
	w.Header().Set("WWW-Authenticate", c)
	denied(w, status, "UNAUTHORIZED")
}

func scopeFor(repo, method string) string {
	if method == http.MethodGet || method == http.MethodHead {
		return "repository:" + repo + ":pull"
	}
	return "repository:" + repo + ":pull,push"
}

// denied writes a distribution error body, which go-containerregistry
// turns into a transport.Error with that code.
func denied(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"errors":[{"code":%q,"message":"refused by the test front"}]}`, code)
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

// requests returns the recorded repository requests and clears them.
func (f *aclFront) requests() ([]frontReq, []tokenReq) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reqs, toks := f.reqs, f.tokenReqs
	f.reqs, f.tokenReqs = nil, nil
	return reqs, toks
}
