package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// Fetcher fetches remote sources for snapshots (seed 002). MCO leaves remote
// sources in the rendered config and lets Ignition fetch them at first boot;
// kiln embeds them so every node gets the same bytes, also on day 2.
type Fetcher struct {
	// Client is the HTTP client; nil means a plain one.
	Client *http.Client
	// Timeout bounds one attempt (default 30s).
	Timeout time.Duration
	// MaxBytes caps one source (default 16 MiB; the rendered config is capped
	// at 1.5 MiB anyway, compressed).
	MaxBytes int64
	// Attempts is the number of tries for errors worth retrying: network
	// errors, timeouts, 429 and 5xx (default 3).
	Attempts int
	// Backoff is the wait before the second attempt; it doubles (default 500ms).
	Backoff time.Duration
}

func (f *Fetcher) withDefaults() Fetcher {
	out := *f
	if out.Client == nil {
		out.Client = &http.Client{}
	}
	if out.Timeout <= 0 {
		out.Timeout = 30 * time.Second
	}
	if out.MaxBytes <= 0 {
		out.MaxBytes = 16 << 20
	}
	if out.Attempts <= 0 {
		out.Attempts = 3
	}
	if out.Backoff <= 0 {
		out.Backoff = 500 * time.Millisecond
	}
	return out
}

// permanentError is a failure a retry cannot fix.
type permanentError struct{ error }

// Fetch returns the body at u, retrying transient failures.
func (f *Fetcher) Fetch(ctx context.Context, u string, headers http.Header) ([]byte, error) {
	ff := f.withDefaults()
	wait := ff.Backoff
	var err error
	for attempt := 1; attempt <= ff.Attempts; attempt++ {
		var body []byte
		body, err = ff.once(ctx, u, headers)
		if err == nil {
			return body, nil
		}
		var perm permanentError
		if errors.As(err, &perm) || ctx.Err() != nil || attempt == ff.Attempts {
			break
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wait *= 2
	}
	if errors.As(err, new(permanentError)) {
		return nil, err
	}
	return nil, fmt.Errorf("%w (after %d attempts)", err, ff.Attempts)
}

func (f *Fetcher) once(ctx context.Context, u string, headers http.Header) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, permanentError{err}
	}
	for k, vs := range headers {
		req.Header[k] = vs
	}
	resp, err := f.Client.Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", f.Timeout)
		}
		return nil, fmt.Errorf("request failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		err := fmt.Errorf("HTTP %s", resp.Status)
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			return nil, err
		}
		return nil, permanentError{err}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.MaxBytes+1))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("timed out after %s", f.Timeout)
		}
		return nil, fmt.Errorf("reading body: %w", err)
	}
	if int64(len(body)) > f.MaxBytes {
		return nil, permanentError{fmt.Errorf("larger than the %d-byte limit", f.MaxBytes)}
	}
	return body, nil
}

// maxConfigDepth bounds nested merge/replace references, as Ignition does
// for its own rendering (it fetches until no reference is left).
const maxConfigDepth = 10

// snapshotter embeds every remote source of one MC's config.
type snapshotter struct {
	f  *Fetcher
	mc string
}

// config resolves the config's merge/replace references the way Ignition's
// engine renders them (replace: the referenced config instead; merge: each
// referenced config merged in order as the child), then embeds every http(s)
// file, append and CA source as a data: URL. The result has no remote links.
func (s snapshotter) config(ctx context.Context, cfg ign35types.Config, where string, depth int) (ign35types.Config, error) {
	if depth > maxConfigDepth {
		return cfg, fmt.Errorf("MachineConfig %q: %signition.config: references nest deeper than %d", s.mc, where, maxConfigDepth)
	}
	refs := cfg.Ignition.Config
	if r := refs.Replace; r.Source != nil {
		if isRemote(*r.Source) {
			return s.reference(ctx, r, where+"ignition.config.replace", depth)
		}
		if err := s.checkScheme(&r, where+"ignition.config.replace"); err != nil {
			return cfg, err
		}
	}
	// data: references stay (MCO keeps them; Ignition reads them at first
	// boot); remote ones are resolved in place, in order.
	cfg.Ignition.Config.Merge = nil
	for i, ref := range refs.Merge {
		at := fmt.Sprintf("%signition.config.merge[%d]", where, i)
		if ref.Source == nil || !isRemote(*ref.Source) {
			if err := s.checkScheme(&ref, at); err != nil {
				return cfg, err
			}
			cfg.Ignition.Config.Merge = append(cfg.Ignition.Config.Merge, ref)
			continue
		}
		child, err := s.reference(ctx, ref, at, depth)
		if err != nil {
			return cfg, err
		}
		cfg = ign35.Merge(cfg, child)
	}
	for i := range cfg.Ignition.Security.TLS.CertificateAuthorities {
		if err := s.embed(ctx, &cfg.Ignition.Security.TLS.CertificateAuthorities[i], fmt.Sprintf("%signition.security.tls.certificateAuthorities[%d]", where, i)); err != nil {
			return cfg, err
		}
	}
	for i := range cfg.Storage.Files {
		f := &cfg.Storage.Files[i]
		at := fmt.Sprintf("%sstorage.files[%d] (%s)", where, i, f.Path)
		if err := s.embed(ctx, &f.Contents, at+" contents"); err != nil {
			return cfg, err
		}
		for j := range f.Append {
			if err := s.embed(ctx, &f.Append[j], fmt.Sprintf("%s append[%d]", at, j)); err != nil {
				return cfg, err
			}
		}
	}
	return cfg, nil
}

// reference fetches, verifies and parses a referenced config, then
// snapshots it in turn.
func (s snapshotter) reference(ctx context.Context, r ign35types.Resource, where string, depth int) (ign35types.Config, error) {
	body, err := s.read(ctx, r, where)
	if err != nil {
		return ign35types.Config{}, err
	}
	if r.Compression != nil && *r.Compression == "gzip" {
		if body, err = gunzip(body); err != nil {
			return ign35types.Config{}, fmt.Errorf("MachineConfig %q: %s: %s: %w", s.mc, where, redact(*r.Source), err)
		}
	}
	child, rpt, err := ign35.ParseCompatibleVersion(body)
	if err != nil || rpt.IsFatal() {
		if err == nil {
			err = errors.New("invalid config")
		}
		return ign35types.Config{}, fmt.Errorf("MachineConfig %q: %s: %s: parsing referenced config: %v%s", s.mc, where, redact(*r.Source), err, reportSuffix(rpt.String()))
	}
	return s.config(ctx, child, where+" → ", depth+1)
}

// embed replaces an http(s) source by a data: URL holding the same bytes,
// gzipped when that is smaller.
func (s snapshotter) embed(ctx context.Context, r *ign35types.Resource, where string) error {
	if r.Source == nil || !isRemote(*r.Source) {
		return s.checkScheme(r, where)
	}
	body, err := s.read(ctx, *r, where)
	if err != nil {
		return err
	}
	if r.Compression == nil || *r.Compression == "" {
		if gz := gzipBytes(body); len(gz) < len(body) {
			body = gz
			c := "gzip"
			r.Compression = &c
			if r.Verification.Hash != nil {
				algo, _, _ := strings.Cut(*r.Verification.Hash, "-")
				h := hashOf(algo, body)
				r.Verification.Hash = &h
			}
		}
	}
	src := "data:;base64," + base64.StdEncoding.EncodeToString(body)
	r.Source = &src
	// Headers were for the remote server; they may hold credentials and
	// mean nothing for a data: URL.
	r.HTTPHeaders = nil
	return nil
}

func (s snapshotter) checkScheme(r *ign35types.Resource, where string) error {
	if r.Source == nil {
		return nil
	}
	u, err := url.Parse(*r.Source)
	if err != nil {
		return fmt.Errorf("MachineConfig %q: %s: source is not a URL: %v", s.mc, where, err)
	}
	if u.Scheme != "data" && u.Scheme != "" {
		return fmt.Errorf("MachineConfig %q: %s: %s: scheme %q is not supported: only http, https and data sources can be snapshotted", s.mc, where, u.Redacted(), u.Scheme)
	}
	return nil
}

// read returns the bytes of a source (remote or data:) after checking
// verification.hash.
func (s snapshotter) read(ctx context.Context, r ign35types.Resource, where string) ([]byte, error) {
	src := *r.Source
	var body []byte
	switch {
	case isRemote(src):
		h := http.Header{}
		for _, kv := range r.HTTPHeaders {
			if kv.Value != nil {
				h.Add(kv.Name, *kv.Value)
			}
		}
		b, err := s.f.Fetch(ctx, src, h)
		if err != nil {
			return nil, fmt.Errorf("MachineConfig %q: %s: fetching %s: %w", s.mc, where, redact(src), err)
		}
		body = b
	case strings.HasPrefix(src, "data:"):
		d, err := dataurl.DecodeString(src)
		if err != nil {
			return nil, fmt.Errorf("MachineConfig %q: %s: decoding data URL: %w", s.mc, where, err)
		}
		body = d.Data
	default:
		if err := s.checkScheme(&r, where); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("MachineConfig %q: %s: %s: source is not a URL", s.mc, where, src)
	}
	if r.Verification.Hash != nil {
		algo, want, _ := strings.Cut(*r.Verification.Hash, "-")
		got := hashOf(algo, body)
		if got == "" {
			return nil, fmt.Errorf("MachineConfig %q: %s: %s: verification.hash: algorithm %q is not supported", s.mc, where, redact(src), algo)
		}
		if got != algo+"-"+want {
			return nil, fmt.Errorf("MachineConfig %q: %s: %s: verification.hash mismatch: want %s, got %s", s.mc, where, redact(src), *r.Verification.Hash, got)
		}
	}
	return body, nil
}

// redact hides a password in a URL's user info: errors and logs name the
// source but never its credentials.
func redact(src string) string {
	u, err := url.Parse(src)
	if err != nil {
		return "(unparseable URL)"
	}
	return u.Redacted()
}

func isRemote(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}

func hashOf(algo string, b []byte) string {
	var h hash.Hash
	switch algo {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return ""
	}
	h.Write(b)
	return algo + "-" + hex.EncodeToString(h.Sum(nil))
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

func gunzip(b []byte) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzipping: %w", err)
	}
	defer r.Close()
	return io.ReadAll(r)
}
