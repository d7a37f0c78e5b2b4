package registry

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/net/http/httpproxy"
)

// Each request is sent with the settings of its own host, never another's:
// one insecure registry does not make a second one insecure, and a CA
// trusted for one registry does not vouch for another. This is CRI-O's
// model (registries.conf "insecure", certs.d/<host[:port]>/ per registry).
// One difference: containers/image keeps a registry's TLS settings for the
// redirects it follows (blob storage on another host); here a redirect
// target is a host of its own, trusted with the system roots unless it is
// configured too.

// ErrPlainHTTP is returned for a plain-HTTP request to a registry that is
// not configured insecure. go-containerregistry falls back to plain HTTP
// by itself for private (RFC 1918) addresses; CRI-O never does, and a
// network attacker could otherwise answer in the registry's place.
var ErrPlainHTTP = errors.New("plain HTTP to a registry that is not configured insecure")

// IsInsecure reports whether host[:port] is reached over plain HTTP or
// unverified TLS: named in r.Insecure (--insecure-registry,
// KILN_INSECURE_REGISTRY) or insecure in r.Config.
func (r Remote) IsInsecure(host string) bool {
	return slices.Contains(r.Insecure, host) || (r.Config != nil && r.Config.Insecure(host))
}

func (r Remote) caFor(host string) []byte {
	if r.Config == nil {
		return nil
	}
	return r.Config.CA(host)
}

// transport is r.Transport when set (tests), else the per-host transport.
// The proxy settings are read from the environment now, not once per
// process as http.ProxyFromEnvironment does.
func (r Remote) transport() http.RoundTripper {
	var t http.RoundTripper = &hostTransport{insecure: r.IsInsecure, ca: r.caFor, proxy: httpproxy.FromEnvironment()}
	if r.Transport != nil {
		t = r.Transport
	}
	t = debugTransport(t)
	if r.session != nil {
		t = &pingCache{s: r.session, next: t}
	}
	return t
}

// hostTransport picks, for each request, a transport with its host's TLS
// settings and the proxy of the environment.
type hostTransport struct {
	insecure func(host string) bool
	ca       func(host string) []byte
	proxy    *httpproxy.Config
}

func (t *hostTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	host := req.URL.Host
	insecure := t.insecure(host)
	if req.URL.Scheme == "http" && !insecure && !plainHTTPAllowed(req) {
		return nil, fmt.Errorf("sending %s %s: %w (add %s to the insecure registries to allow it)", req.Method, req.URL.Redacted(), ErrPlainHTTP, host)
	}
	var ca []byte
	if !insecure {
		ca = t.ca(host)
	}
	rt, err := sharedTransport(*t.proxy, insecure, ca)
	if err != nil {
		return nil, fmt.Errorf("setting up TLS for %s: %w", host, err)
	}
	return rt.RoundTrip(req)
}

// plainHTTPAllowed lets plain HTTP reach loopback (Docker's default
// insecure range 127.0.0.0/8, and go-containerregistry's own rule: nothing
// on the network sits between) and a redirect from a registry that was
// itself reached over plain HTTP (the blobs are checked by digest).
func plainHTTPAllowed(req *http.Request) bool {
	if isLoopback(req.URL.Hostname()) {
		return true
	}
	return req.Response != nil && req.Response.Request != nil && req.Response.Request.URL.Scheme == "http"
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// transportKey names one combination of settings; hosts that share it
// share connections.
type transportKey struct {
	proxy    httpproxy.Config
	insecure bool
	ca       [sha256.Size]byte
}

// transports caches one *http.Transport per settings so that connections
// are reused across calls, as with go-containerregistry's default.
var transports sync.Map // transportKey → *http.Transport

func sharedTransport(proxy httpproxy.Config, insecure bool, ca []byte) (*http.Transport, error) {
	key := transportKey{proxy: proxy, insecure: insecure}
	if ca != nil {
		key.ca = sha256.Sum256(ca)
	}
	if t, ok := transports.Load(key); ok {
		return t.(*http.Transport), nil
	}
	t, err := newTransport(proxy, insecure, ca)
	if err != nil {
		return nil, err
	}
	actual, _ := transports.LoadOrStore(key, t)
	return actual.(*http.Transport), nil
}

// newTransport is go-containerregistry's default transport with the given
// proxy and TLS trust.
func newTransport(proxy httpproxy.Config, insecure bool, ca []byte) (*http.Transport, error) {
	t := remote.DefaultTransport.(*http.Transport).Clone()
	proxyFunc := proxy.ProxyFunc()
	t.Proxy = func(req *http.Request) (*url.URL, error) { return proxyFunc(req.URL) }
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case insecure:
		// registries.conf "insecure": TLS without verification, or plain HTTP.
		cfg.InsecureSkipVerify = true //nolint:gosec // configured per registry
	case ca != nil:
		pool, err := rootsWith(ca)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	t.TLSClientConfig = cfg
	return t, nil
}

// rootsWith returns the system roots plus ca.
func rootsWith(ca []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New("the registry's CA bundle holds no PEM certificate")
	}
	return pool, nil
}
