package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vincent-petithory/dataurl"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// ignitionFetch is what the node's Ignition v2.26.0 does with a resource,
// step for step. Ignition's fetcher lives in internal packages
// (internal/resource, internal/exec/util, internal/util) that no other
// module can import, and no exported package fetches and verifies, so this
// follows their code with the exported pieces they are built on:
//
//   - Fetcher.FetchToBuffer (internal/resource/url.go): url.Parse, then
//     fetchFromHTTP (a GET, status 200) or fetchFromDataURL
//     (dataurl.DecodeString of u.String(), the same library and call);
//   - decompressCopyHashAndVerify / uncompress: gzip.NewReader when
//     compression is "gzip", io.Copy into an io.MultiWriter of the buffer and
//     the hasher, bytes.Equal of the sums;
//   - files and appends (internal/exec/util/file.go newFetchOp) and TLS CAs
//     (internal/resource/http.go getCABlob): util.GetHasher and
//     util.HashParts, i.e. types.Verification.HashParts (exported, called
//     here), sha512 or sha256, hex.DecodeString of the expected sum;
//   - config references (internal/exec/config_fetcher.go
//     fetchReferencedConfig): FetchToBuffer with compression and no hasher,
//     then util.AssertValid over the decompressed bytes (a lower-case hex
//     string comparison), then config.Parse (here ign35.ParseCompatibleVersion,
//     Ignition's exported parser for the spec render works in).
//
// None of kiln's code is used, so the answers can be compared.
func ignitionFetch(r ign35types.Resource, reference bool) error {
	u, err := url.Parse(*r.Source)
	if err != nil {
		return err
	}
	var src io.Reader
	switch u.Scheme {
	case "http", "https":
		resp, err := http.Get(u.String())
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("HTTP %s", resp.Status)
		}
		src = resp.Body
	case "data":
		d, err := dataurl.DecodeString(u.String())
		if err != nil {
			return err
		}
		src = bytes.NewBuffer(d.Data)
	default:
		return fmt.Errorf("scheme %q unsupported", u.Scheme)
	}
	var hasher hash.Hash
	var expected []byte
	if !reference && r.Verification.Hash != nil {
		function, sum, err := r.Verification.HashParts()
		if err != nil {
			return err
		}
		switch function {
		case "sha512":
			hasher = sha512.New()
		case "sha256":
			hasher = sha256.New()
		default:
			return fmt.Errorf("unrecognized hash function")
		}
		if expected, err = hex.DecodeString(sum); err != nil {
			return err
		}
	}
	dec := io.NopCloser(src)
	switch c := ptrOr(r.Compression); c {
	case "":
	case "gzip":
		if dec, err = gzip.NewReader(src); err != nil {
			return err
		}
	default:
		return fmt.Errorf("invalid compression method %q", c)
	}
	defer dec.Close()
	var dest bytes.Buffer
	var w io.Writer = &dest
	if hasher != nil {
		w = io.MultiWriter(&dest, hasher)
	}
	if _, err := io.Copy(w, dec); err != nil {
		return err
	}
	if hasher != nil && !bytes.Equal(hasher.Sum(nil), expected) {
		return fmt.Errorf("hash verification failed")
	}
	if !reference {
		return nil
	}
	if r.Verification.Hash != nil { // util.AssertValid
		function, sum, err := r.Verification.HashParts()
		if err != nil {
			return err
		}
		var got []byte
		switch function {
		case "sha512":
			s := sha512.Sum512(dest.Bytes())
			got = s[:]
		case "sha256":
			s := sha256.Sum256(dest.Bytes())
			got = s[:]
		default:
			return fmt.Errorf("unrecognized hash function")
		}
		if hex.EncodeToString(got) != sum {
			return fmt.Errorf("hash verification failed")
		}
	}
	_, rpt, err := ign35.ParseCompatibleVersion(dest.Bytes())
	if err == nil && rpt.IsFatal() {
		err = fmt.Errorf("invalid referenced config: %s", rpt.String())
	}
	return err
}

func ptrOr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// parityPayload is what each resource holds, decompressed: a referenced
// config for merge/replace, text otherwise.
func parityPayload(kind string) []byte {
	if kind == "merge" || kind == "replace" {
		return []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/parity-merged","mode":420,"contents":{"source":"data:,merged"}}]}}`)
	}
	return []byte(strings.Repeat("kiln parity payload\n", 20))
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func sumHex(function string, b []byte) string {
	if function == "sha256" {
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	s := sha512.Sum512(b)
	return hex.EncodeToString(s[:])
}

// parityMC puts the resource where kind says.
func parityMC(kind string, res ign35types.Resource) *mcfgv1.MachineConfig {
	rj, _ := json.Marshal(res)
	var raw string
	switch kind {
	case "file":
		raw = `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/parity","mode":420,"contents":` + string(rj) + `}]}}`
	case "append":
		raw = `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/parity","mode":420,"append":[` + string(rj) + `]}]}}`
	case "merge":
		raw = `{"ignition":{"version":"3.5.0","config":{"merge":[` + string(rj) + `]}}}`
	case "replace":
		raw = `{"ignition":{"version":"3.5.0","config":{"replace":` + string(rj) + `}}}`
	case "ca":
		raw = `{"ignition":{"version":"3.5.0","security":{"tls":{"certificateAuthorities":[` + string(rj) + `]}}}}`
	}
	return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "50-parity", Labels: map[string]string{mcrender.RoleLabel: "worker"}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}}}
}

// renderedResource is the resource as it stands in the rendered config,
// for the kinds that keep one there.
func renderedResource(t *testing.T, kind string, mc *mcfgv1.MachineConfig) (ign35types.Resource, bool) {
	// Plain decoding: MCO's overwrite=true on an append-only file makes
	// Ignition's validation refuse the rendered config as a whole (see
	// doc.go); the resource is what is checked here.
	var cfg ign35types.Config
	if err := json.Unmarshal(mc.Spec.Config.Raw, &cfg); err != nil {
		t.Fatalf("rendered config does not decode: %v", err)
	}
	switch kind {
	case "file":
		for _, f := range cfg.Storage.Files {
			if f.Path == "/etc/parity" {
				return f.Contents, true
			}
		}
	case "append":
		for _, f := range cfg.Storage.Files {
			if f.Path == "/etc/parity" && len(f.Append) == 1 {
				return f.Append[0], true
			}
		}
	case "ca":
		if cas := cfg.Ignition.Security.TLS.CertificateAuthorities; len(cas) == 1 {
			return cas[0], true
		}
	case "merge":
		if m := cfg.Ignition.Config.Merge; len(m) == 1 {
			return m[0], true
		}
		return ign35types.Resource{}, false
	case "replace":
		if r := cfg.Ignition.Config.Replace; r.Source != nil {
			return r, true
		}
		return ign35types.Resource{}, false
	}
	t.Fatalf("%s resource missing from the rendered config", kind)
	return ign35types.Resource{}, false
}

// TestHashVerdictMatchesIgnitionFetcher renders a MachineConfig holding one
// resource (file contents, append, merge, replace, CA), served as a data:
// URL or over HTTP, gzip or not, with a right, wrong or wrongly computed
// verification.hash, and checks render accepts exactly when Ignition's
// fetch-and-verify accepts. When render accepts, the resource it leaves in
// the rendered config (embedded or kept) must pass Ignition's check too.
func TestHashVerdictMatchesIgnitionFetcher(t *testing.T) {
	stored := map[string][]byte{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, ok := stored[strings.TrimPrefix(req.URL.Path, "/")]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcrender.RoleLabel: "worker"}}}}
	hashes := []string{"none", "sha512-right", "sha512-zero", "sha512-over-stored-bytes", "sha512-right-uppercase", "sha256-right", "sha256-zero"}
	var accepted, refused int
	for _, kind := range []string{"file", "append", "merge", "replace", "ca"} {
		for _, scheme := range []string{"data", "http"} {
			for _, comp := range []string{"none", "gzip", "gzip-claimed-plain-bytes"} {
				for _, hv := range hashes {
					name := strings.Join([]string{kind, scheme, comp, hv}, "/")
					payload := parityPayload(kind)
					bytesStored := payload
					res := ign35types.Resource{}
					if comp != "none" {
						c := "gzip"
						res.Compression = &c
						if comp == "gzip" {
							bytesStored = gz(payload)
						}
					}
					function, variant, _ := strings.Cut(hv, "-")
					var h string
					switch variant {
					case "right":
						h = function + "-" + sumHex(function, payload)
					case "zero":
						h = function + "-" + strings.Repeat("0", len(sumHex(function, nil)))
					case "over-stored-bytes":
						h = function + "-" + sumHex(function, bytesStored)
					case "right-uppercase":
						h = function + "-" + strings.ToUpper(sumHex(function, payload))
					}
					if h != "" {
						res.Verification.Hash = &h
					}
					src := "data:;base64," + base64.StdEncoding.EncodeToString(bytesStored)
					if scheme == "http" {
						key := strings.ReplaceAll(name, "/", "_")
						stored[key] = bytesStored
						src = srv.URL + "/" + key
					}
					res.Source = &src
					t.Run(name, func(t *testing.T) {
						isRef := kind == "merge" || kind == "replace"
						ignErr := ignitionFetch(res, isRef)
						out, kilnErr := mcrender.Render(context.Background(), mcrender.Request{Pool: pool, Configs: []*mcfgv1.MachineConfig{parityMC(kind, res)}, Sources: testFetcher()})
						if (ignErr == nil) != (kilnErr == nil) {
							t.Fatalf("Ignition says %v, kiln says %v", ignErr, kilnErr)
						}
						if kilnErr != nil {
							refused++
							if !strings.Contains(kilnErr.Error(), `MachineConfig "50-parity"`) {
								t.Errorf("error does not name the MachineConfig: %v", kilnErr)
							}
							return
						}
						accepted++
						if r, ok := renderedResource(t, kind, out.Config); ok {
							if err := ignitionFetch(r, isRef); err != nil {
								t.Fatalf("Ignition refuses the resource render wrote: %v (%+v)", err, r)
							}
						}
					})
				}
			}
		}
	}
	// Both answers must occur, or the comparison proves nothing.
	if accepted == 0 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: the table must hold both", accepted, refused)
	}
}
