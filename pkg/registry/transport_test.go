package registry_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"go.podman.io/image/v5/pkg/sysregistriesv2"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// The registries below bind this machine's address off loopback
// (env.HostIP): plain HTTP to loopback is allowed by rule, and Go never
// sends loopback requests through a proxy.

func caPEM(t *testing.T, reg *env.Registry) []byte {
	t.Helper()
	b, err := os.ReadFile(reg.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// insecureConf marks hosts insecure the way registries.conf does.
func insecureConf(hosts ...string) sysregistriesv2.V2RegistriesConf {
	var c sysregistriesv2.V2RegistriesConf
	for _, h := range hosts {
		c.Registries = append(c.Registries, sysregistriesv2.Registry{Prefix: h, Endpoint: sysregistriesv2.Endpoint{Location: h, Insecure: true}})
	}
	return c
}

func wantX509Error(t *testing.T, r registry.Remote, ref string) {
	t.Helper()
	err := pushPull(t, r, ref)
	var ua x509.UnknownAuthorityError
	if !errors.As(err, &ua) {
		t.Fatalf("push and pull %s: %v, want an unknown-authority x509 error", ref, err)
	}
}

func TestTransportInsecureAndCAArePerRegistry(t *testing.T) {
	isolate(t)
	ip := env.HostIP(t)
	plain := env.StartRegistry(t, env.RegistryOptions{Addr: ip})
	trusted := env.StartRegistry(t, env.RegistryOptions{Addr: ip, TLS: true})
	untrusted := env.StartRegistry(t, env.RegistryOptions{Addr: ip, TLS: true})
	cfg := &registry.Config{
		Registries: insecureConf(plain.Host),
		// untrusted's CA is in trusted's bundle: it must vouch for
		// trusted's host only.
		CAs: map[string][]byte{trusted.Host: append(caPEM(t, trusted), caPEM(t, untrusted)...)},
	}
	r := registry.Remote{Config: cfg, Backoff: remote.Backoff{Steps: 1}}
	wantOK(t, r, plain.Ref("org/app:1"))
	wantOK(t, r, trusted.Ref("org/app:1"))
	// Neither plain's insecurity nor trusted's CA reaches untrusted.
	wantX509Error(t, r, untrusted.Ref("org/app:1"))
	// The CA applies to trusted only, not to the system roots of others:
	// without a Config trusted is refused too.
	wantX509Error(t, registry.Remote{Backoff: remote.Backoff{Steps: 1}}, trusted.Ref("org/app:2"))
}

func TestTransportInsecureFlagMakesOnlyItsRegistryInsecure(t *testing.T) {
	isolate(t)
	ip := env.HostIP(t)
	plain := env.StartRegistry(t, env.RegistryOptions{Addr: ip})
	tlsReg := env.StartRegistry(t, env.RegistryOptions{Addr: ip, TLS: true})
	// --insecure-registry / KILN_INSECURE_REGISTRY for plain only.
	r := registry.Remote{Insecure: []string{plain.Host}, Backoff: remote.Backoff{Steps: 1}}
	wantOK(t, r, plain.Ref("org/app:1"))
	wantX509Error(t, r, tlsReg.Ref("org/app:1"))
	// Insecure also means unverified TLS, as in registries.conf.
	r.Insecure = append(r.Insecure, tlsReg.Host)
	wantOK(t, r, tlsReg.Ref("org/app:1"))
}

// go-containerregistry speaks plain HTTP to a private (RFC 1918) address
// by itself; kiln, like CRI-O, does not unless the registry is insecure.
func TestTransportRefusesPlainHTTPToASecureRegistry(t *testing.T) {
	isolate(t)
	plain := env.StartRegistry(t, env.RegistryOptions{Addr: env.PrivateHostIP(t)})
	err := pushPull(t, registry.Remote{Backoff: remote.Backoff{Steps: 1}}, plain.Ref("org/app:1"))
	if err != nil && !strings.Contains(err.Error(), "add "+plain.Host+" to the insecure registries") {
		t.Errorf("error %q does not say how to allow it", err)
	}
	if !errors.Is(err, registry.ErrPlainHTTP) {
		t.Fatalf("push to %s, not configured insecure: %v, want %v", plain.Host, err, registry.ErrPlainHTTP)
	}
	wantOK(t, registry.Remote{Config: &registry.Config{Registries: insecureConf(plain.Host)}}, plain.Ref("org/app:1"))
}

// setProxyEnv sets both spellings: Go reads the upper case first and falls
// back to the lower case when it is empty.
func setProxyEnv(t *testing.T, proxy, noProxy string) {
	t.Helper()
	for _, v := range []struct{ name, value string }{{"HTTP_PROXY", proxy}, {"HTTPS_PROXY", proxy}, {"NO_PROXY", noProxy}} {
		t.Setenv(v.name, v.value)
		t.Setenv(strings.ToLower(v.name), v.value)
	}
}

func proxied(t *testing.T, p *env.Proxy, host string) int {
	t.Helper()
	n, err := p.Requests(host)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pullAll reads ref's manifest and every layer, checking their digests.
func pullAll(t *testing.T, r registry.Remote, ref string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parsed, err := r.ParseRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := r.Image(ctx, parsed)
	if err != nil {
		return fmt.Errorf("pulling %s: %w", ref, err)
	}
	return validate.Image(img)
}

// tinyproxy mishandles a kept-alive connection after a HEAD response that
// announces a body length (it waits for that body), which a push does
// (HEAD blob, then POST upload). Plain-HTTP pushes therefore go around it
// (the environment is read per call); pulls, and anything tunnelled with
// CONNECT, go through it.
func TestTransportSendsThroughTheProxyOfTheEnvironment(t *testing.T) {
	isolate(t)
	ip := env.HostIP(t)
	plain := env.StartRegistry(t, env.RegistryOptions{Addr: ip})
	tlsReg := env.StartRegistry(t, env.RegistryOptions{Addr: ip, TLS: true})
	proxy := env.StartProxy(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", proxy.Log())
		}
	})
	r := registry.Remote{
		Insecure: []string{plain.Host},
		Config:   &registry.Config{CAs: map[string][]byte{tlsReg.Host: caPEM(t, tlsReg)}},
		Backoff:  remote.Backoff{Steps: 1},
	}
	wantOK(t, r, plain.Ref("org/app:1"))
	if n := proxied(t, proxy, plain.Host); n != 0 {
		t.Fatalf("the proxy forwarded %d requests before it was set", n)
	}
	setProxyEnv(t, proxy.URL, "")
	if err := pullAll(t, r, plain.Ref("org/app:1")); err != nil {
		t.Fatal(err)
	}
	if n := proxied(t, proxy, plain.Host); n == 0 {
		t.Fatalf("the proxy forwarded no request to %s (plain HTTP)", plain.Host)
	}
	wantOK(t, r, tlsReg.Ref("org/app:1"))
	if err := pullAll(t, r, tlsReg.Ref("org/app:1")); err != nil {
		t.Fatal(err)
	}
	if n := proxied(t, proxy, tlsReg.Host); n == 0 {
		t.Fatalf("the proxy tunnelled no connection to %s (HTTPS)", tlsReg.Host)
	}
}

func TestTransportBypassesTheProxyForNoProxy(t *testing.T) {
	isolate(t)
	ip := env.HostIP(t)
	plain := env.StartRegistry(t, env.RegistryOptions{Addr: ip})
	proxy := env.StartProxy(t)
	r := registry.Remote{Insecure: []string{plain.Host}, Backoff: remote.Backoff{Steps: 1}}
	setProxyEnv(t, proxy.URL, "example.com,"+ip)
	wantOK(t, r, plain.Ref("org/app:1"))
	if err := pullAll(t, r, plain.Ref("org/app:1")); err != nil {
		t.Fatal(err)
	}
	if n := proxied(t, proxy, plain.Host); n != 0 {
		t.Fatalf("the proxy forwarded %d requests to %s, which NO_PROXY excludes", n, plain.Host)
	}
	// The same proxy forwards once NO_PROXY no longer names the registry:
	// the test can fail.
	setProxyEnv(t, proxy.URL, "example.com")
	if err := pullAll(t, r, plain.Ref("org/app:1")); err != nil {
		t.Fatal(err)
	}
	if n := proxied(t, proxy, plain.Host); n == 0 {
		t.Fatalf("the proxy forwarded nothing to %s once NO_PROXY left it out", plain.Host)
	}
}
