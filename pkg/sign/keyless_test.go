package sign

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigstore/cosign/v2/pkg/cosign"
	ociremote "github.com/sigstore/cosign/v2/pkg/oci/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

const testIssuer = "https://oidc.kiln.test"

// fakeFulcio is a loopback stand-in for Fulcio's v1 signingCert API: it
// checks the bearer token and the proof of possession, and certifies the
// key for the token's email with the OIDC issuer extension, as Fulcio does.
func fakeFulcio(t *testing.T) (*httptest.Server, *x509.CertPool) {
	srv, pool, _ := fakeFulcioWithRoot(t)
	return srv, pool
}

// fakeFulcioWithRoot is fakeFulcio that also returns its root, PEM.
func fakeFulcioWithRoot(t *testing.T) (*httptest.Server, *x509.CertPool, []byte) {
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kiln test fulcio"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	ca, _ := x509.ParseCertificate(caDER)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var req struct {
			PublicKey struct {
				Content []byte `json:"content"`
			} `json:"publicKey"`
			SignedEmailAddress []byte `json:"signedEmailAddress"`
		}
		if r.URL.Path != "/api/v1/signingCert" || !ok || json.NewDecoder(r.Body).Decode(&req) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		email, err := tokenSubject(token)
		pub, perr := cryptoutils.UnmarshalPEMToPublicKey(req.PublicKey.Content)
		sum := sha256.Sum256([]byte(email))
		ecPub, isEC := pub.(*ecdsa.PublicKey)
		if err != nil || perr != nil || !isEC || !ecdsa.VerifyASN1(ecPub, sum[:], req.SignedEmailAddress) {
			http.Error(w, "proof of possession failed", http.StatusUnauthorized)
			return
		}
		issuer, _ := asn1.Marshal(testIssuer)
		leaf := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), EmailAddresses: []string{email},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(10 * time.Minute),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
			ExtraExtensions: []pkix.Extension{
				{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte(testIssuer)},
				{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}, Value: issuer},
			}}
		der, err := x509.CreateCertificate(rand.Reader, leaf, ca, pub, caKey)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: der})
		_ = pem.Encode(w, &pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	}))
	t.Cleanup(srv.Close)
	return srv, pool, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

func writeToken(t *testing.T, claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(enc([]byte(`{"alg":"RS256"}`))+"."+enc([]byte(claims))+".c2ln\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestKeylessSign signs with a Fulcio certificate (no Rekor upload) and
// checks the result with cosign's own verification against the fake
// Fulcio's root, for the right identity only.
func TestKeylessSign(t *testing.T) {
	ctx := t.Context()
	reg := env.StartRegistry(t, env.RegistryOptions{})
	r := registry.Remote{Insecure: []string{reg.Host}}
	image := pushImage(t, reg.Host, "kiln/keyless:1")
	fulcio, roots := fakeFulcio(t)
	const email = "tekton-pipelines@kiln.test"
	res, err := Sign(ctx, r, SignInput{Image: image, Keyless: &KeylessOptions{
		FulcioURL: fulcio.URL, IDTokenPath: writeToken(t, `{"iss":"`+testIssuer+`","email":"`+email+`","sub":"x"}`),
	}, Inputs: testInputs(t, reg.Host)})
	if err != nil {
		t.Fatal(err)
	}
	if res.SignatureRef == "" || res.AttestationRef == "" {
		t.Fatalf("result %+v", res)
	}
	ref, _ := r.ParseRef(image)
	ropts, _ := r.Options(ctx)
	check := func(subject string) error {
		co := &cosign.CheckOpts{
			RegistryClientOpts: []ociremote.Option{ociremote.WithRemoteOptions(ropts...)},
			RootCerts:          roots, IgnoreTlog: true, IgnoreSCT: true,
			Identities:    []cosign.Identity{{Issuer: testIssuer, Subject: subject}},
			ClaimVerifier: cosign.SimpleClaimVerifier,
		}
		if _, _, err := cosign.VerifyImageSignatures(ctx, ref, co); err != nil {
			return err
		}
		co.ClaimVerifier = cosign.IntotoSubjectClaimVerifier
		_, _, err := cosign.VerifyImageAttestations(ctx, ref, co)
		return err
	}
	if err := check(email); err != nil {
		t.Fatalf("cosign verification of the keyless signature: %v", err)
	}
	if err := check("someone-else@kiln.test"); err == nil {
		t.Fatal("a keyless signature verified for another identity")
	}
}

func TestKeylessErrors(t *testing.T) {
	fulcio, _ := fakeFulcio(t)
	cases := []struct{ name, token, fulcio, want string }{
		{"not a JWT", "", fulcio.URL, "the identity token is not a JWT"},
		{"no identity", "{}", fulcio.URL, "the identity token has neither email nor sub"},
		{"fulcio refuses", "FORGED", fulcio.URL, "keyless: getting a certificate from Fulcio"},
		{"fulcio unreachable", `{"sub":"a"}`, "http://127.0.0.1:1", "keyless: getting a certificate from Fulcio http://127.0.0.1:1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "token")
			tok := "not-a-jwt"
			switch tc.token {
			case "":
			case "FORGED":
				// A valid JWT shape whose proof will not match: sign one
				// subject, claim another.
				tok = strings.TrimSpace(readFile(t, writeToken(t, `{"sub":"a"}`)))
				fulcioBad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					http.Error(w, "proof of possession failed", http.StatusUnauthorized)
				}))
				defer fulcioBad.Close()
				tc.fulcio = fulcioBad.URL
			default:
				tok = strings.TrimSpace(readFile(t, writeToken(t, tc.token)))
			}
			_ = os.WriteFile(p, []byte(tok), 0o600)
			_, err := newKeylessSigner(KeylessOptions{FulcioURL: tc.fulcio, IDTokenPath: p})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), tok) && len(tok) > 20 {
				t.Error("error leaks the identity token")
			}
		})
	}
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
