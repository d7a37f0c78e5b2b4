package env

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// secureConfig writes the certificate and htpasswd files RegistryOptions ask
// for and returns the config sections that turn them on (and the CA to
// trust). With neither option it returns nothing: the default is unchanged.
func secureConfig(dir, addr string, o RegistryOptions) (string, *x509.CertPool, error) {
	var cfg strings.Builder
	var pool *x509.CertPool
	if o.TLS {
		certPEM, keyPEM, err := SelfSigned(addr)
		if err != nil {
			return "", nil, fmt.Errorf("creating registry certificate: %w", err)
		}
		cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
		if err := os.WriteFile(cert, certPEM, 0o644); err != nil {
			return "", nil, err
		}
		if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
			return "", nil, err
		}
		pool = x509.NewCertPool()
		pool.AppendCertsFromPEM(certPEM)
		fmt.Fprintf(&cfg, "  tls:\n    certificate: %s\n    key: %s\n", cert, key)
	}
	if len(o.Users) > 0 {
		users := make([]string, 0, len(o.Users))
		for u := range o.Users {
			users = append(users, u)
		}
		sort.Strings(users)
		var lines strings.Builder
		for _, u := range users {
			h, err := bcrypt.GenerateFromPassword([]byte(o.Users[u]), bcrypt.MinCost)
			if err != nil {
				return "", nil, err
			}
			fmt.Fprintf(&lines, "%s:%s\n", u, h)
		}
		path := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(path, []byte(lines.String()), 0o600); err != nil {
			return "", nil, err
		}
		fmt.Fprintf(&cfg, "auth:\n  htpasswd:\n    realm: kiln-test\n    path: %s\n", path)
	}
	return cfg.String(), pool, nil
}

// SelfSigned makes a self-signed CA certificate that also serves addr (an
// IP or a host name, with or without a port) and localhost, for test TLS
// servers: its PEM is their clients' CA.
func SelfSigned(addr string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "kiln test registry"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
		DNSNames: []string{"localhost"},
	}
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else if host != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, host)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// Transport returns an HTTP transport that trusts this registry's CA (when
// TLS is on); otherwise a clone of the default transport.
func (r *Registry) Transport() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if r.CA != nil {
		t.TLSClientConfig = &tls.Config{RootCAs: r.CA, MinVersion: tls.VersionTLS12}
	}
	return t
}

// CAFile returns the path of the CA certificate (TLS on), else "".
func (r *Registry) CAFile() string {
	if r.CA == nil {
		return ""
	}
	return filepath.Join(r.dir, "tls.crt")
}
