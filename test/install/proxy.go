package install

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Request is one API request as the apiserver's authorizer sees it.
type Request struct {
	Verb, APIGroup, Resource, Subresource, Namespace, Name string
	// Status is the HTTP status the apiserver answered; 0 while unanswered.
	Status int
}

// GroupResource is "resource.group" (core: "resource"), with
// "/subresource" appended when there is one: the form RBAC rules use.
func (r Request) GroupResource() string {
	res := r.Resource
	if r.Subresource != "" {
		res += "/" + r.Subresource
	}
	if r.APIGroup != "" {
		return res + "." + r.APIGroup
	}
	return res
}

func (r Request) String() string {
	return fmt.Sprintf("%s %s ns=%q name=%q -> %d", r.Verb, r.GroupResource(), r.Namespace, r.Name, r.Status)
}

// Proxy is a plain-HTTP front of the test apiserver that sends every
// request as one user (Kubernetes impersonation with the admin's
// credentials) and records it. A step given Proxy.Kubeconfig runs with
// exactly that user's RBAC: the apiserver authorizes each request as the
// impersonated user, as it would a pod's ServiceAccount token.
type Proxy struct {
	URL  string
	User string
	mu   sync.Mutex
	reqs []Request
}

// StartProxy starts a proxy impersonating user in front of admin's
// apiserver; it stops when t ends.
func StartProxy(t testing.TB, admin *rest.Config, user string) *Proxy {
	t.Helper()
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatalf("proxy transport: %v", err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	infos := &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}
	p := &Proxy{User: user}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Only the proxy says who the client is.
			for h := range pr.Out.Header {
				if strings.HasPrefix(h, "Impersonate-") || h == "Authorization" {
					pr.Out.Header.Del(h)
				}
			}
		},
		Transport:     rt,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := infos.NewRequestInfo(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if !info.IsResourceRequest {
			rp.ServeHTTP(w, r) // discovery: allowed to every authenticated user
			return
		}
		// Recorded before it is answered: a watch is answered (headers
		// flushed) at once but its handler returns only when it closes.
		p.mu.Lock()
		i := len(p.reqs)
		p.reqs = append(p.reqs, Request{Verb: info.Verb, APIGroup: info.APIGroup, Resource: info.Resource,
			Subresource: info.Subresource, Namespace: info.Namespace, Name: info.Name})
		p.mu.Unlock()
		rp.ServeHTTP(&statusWriter{ResponseWriter: w, set: func(code int) {
			p.mu.Lock()
			p.reqs[i].Status = code
			p.mu.Unlock()
		}}, r)
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

type statusWriter struct {
	http.ResponseWriter
	set     func(int)
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		w.set(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets watch events through as they come.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Requests returns the resource requests recorded so far.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.reqs...)
}

// Reset forgets the recorded requests.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.reqs = nil
	p.mu.Unlock()
}

// Summary lists the distinct requests, sorted, for failure messages.
func (p *Proxy) Summary() string {
	seen := map[string]bool{}
	for _, r := range p.Requests() {
		seen[r.String()] = true
	}
	lines := make([]string, 0, len(seen))
	for l := range seen {
		lines = append(lines, "  "+l)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// Config is a client config through the proxy.
func (p *Proxy) Config() *rest.Config { return &rest.Config{Host: p.URL, QPS: 1000, Burst: 2000} }

// Kubeconfig writes a kubeconfig for the proxy, the way a step receives
// one with --kubeconfig, and returns its path.
func (p *Proxy) Kubeconfig(t testing.TB) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.URL}
	c.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	c.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	c.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	return path
}
