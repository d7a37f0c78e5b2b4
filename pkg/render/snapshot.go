package render

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// maxConfigDepth bounds nested merge/replace references, as Ignition does
// for its own rendering (it fetches until no reference is left).
const maxConfigDepth = 10

// snapshotter embeds every remote source of one MC's config and checks
// every verification.hash the node's Ignition would check.
type snapshotter struct {
	f  *Fetcher
	mc string
	// inflated is shared by all MCs of one render: it bounds the bytes
	// render decompresses in total, whatever the number of sources.
	inflated *ignres.Limit
}

// inflationLimit is the budget of one render's source checks.
func inflationLimit() *ignres.Limit {
	return ignres.NewLimit(ignres.MaxContent, "kiln's cap on what render decompresses for one pool, ignres.MaxContent")
}

// Open is f as the engine's seam (mcrender.Sources): one render's fetches
// share its deadline and its decompression budget. The engine does not
// call it for an MCO-like render (Request.AsMCO): MCO neither fetches
// remote sources nor checks their hashes.
func (f *Fetcher) Open(ctx context.Context) (context.Context, context.CancelFunc, mcrender.Resolver) {
	ctx, cancel := f.renderContext(ctx)
	inflated := inflationLimit()
	return ctx, cancel, func(ctx context.Context, mc string, cfg ign35types.Config) (ign35types.Config, error) {
		return snapshotter{f: f, mc: mc, inflated: inflated}.config(ctx, cfg, "spec.config.", 0)
	}
}

// config resolves the config's merge/replace references the way Ignition's
// engine renders them (replace: the referenced config instead; merge: each
// referenced config merged in order as the child), then embeds every http(s)
// file, append and CA source as a data: URL. The result has no remote links.
// Every hash is checked over the decompressed content, as Ignition does.
func (s snapshotter) config(ctx context.Context, cfg ign35types.Config, where string, depth int) (ign35types.Config, error) {
	if depth > maxConfigDepth {
		return cfg, fmt.Errorf("MachineConfig %q: %signition.config: references nest deeper than %d", s.mc, where, maxConfigDepth)
	}
	refs := cfg.Ignition.Config
	if r := refs.Replace; r.Source != nil {
		if isRemote(*r.Source) {
			return s.reference(ctx, r, where+"ignition.config.replace", depth)
		}
		if err := s.keptReference(r, where+"ignition.config.replace"); err != nil {
			return cfg, err
		}
	}
	// data: references stay (MCO keeps them; Ignition reads them at first
	// boot); remote ones are resolved in place, in order.
	cfg.Ignition.Config.Merge = nil
	for i, ref := range refs.Merge {
		at := fmt.Sprintf("%signition.config.merge[%d]", where, i)
		if ref.Source == nil || !isRemote(*ref.Source) {
			if err := s.keptReference(ref, at); err != nil {
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

// reference fetches a referenced config, decompresses it (at most
// ignres.MaxReferencedConfig bytes), checks its hash over the decompressed
// bytes as Ignition's fetchReferencedConfig does, parses it and snapshots
// it in turn.
func (s snapshotter) reference(ctx context.Context, r ign35types.Resource, where string, depth int) (ign35types.Config, error) {
	raw, err := s.raw(ctx, r, where)
	if err != nil {
		return ign35types.Config{}, err
	}
	body, err := ignres.ReferenceContent(raw, r, ignres.ReferenceLimit(), s.inflated)
	if err != nil {
		return ign35types.Config{}, s.sourceError(r, where, err)
	}
	if err := ignres.CheckShape(body); err != nil {
		return ign35types.Config{}, fmt.Errorf("MachineConfig %q: %s: %s: %w", s.mc, where, redact(*r.Source), err)
	}
	child, rpt, err := ign35.ParseCompatibleVersion(body)
	if err != nil || rpt.IsFatal() {
		if err == nil {
			err = errors.New("invalid config")
		}
		return ign35types.Config{}, fmt.Errorf("MachineConfig %q: %s: %s: parsing referenced config: %v%s", s.mc, where, redact(*r.Source), err, mcrender.ReportSuffix(rpt.String()))
	}
	return s.config(ctx, child, where+" → ", depth+1)
}

// keptReference checks a data: config reference that stays in the config
// for the node's Ignition: its hash and size are checked now, so a config
// the node would refuse is never rendered.
func (s snapshotter) keptReference(r ign35types.Resource, where string) error {
	if err := s.checkScheme(&r, where); err != nil || r.Source == nil {
		return err
	}
	raw, err := s.raw(context.Background(), r, where)
	if err != nil {
		return err
	}
	if _, err := ignres.ReferenceContent(raw, r, ignres.ReferenceLimit(), s.inflated); err != nil {
		return s.sourceError(r, where, err)
	}
	return nil
}

// embed checks a file, append or CA source (decompressed, hashed, bounded)
// and replaces an http(s) source by a data: URL holding the same bytes,
// gzipped when that is smaller. verification.hash is left as it is: Ignition
// checks it over the decompressed content, which embedding does not change.
func (s snapshotter) embed(ctx context.Context, r *ign35types.Resource, where string) error {
	if r.Source == nil {
		return nil
	}
	remote := isRemote(*r.Source)
	if !remote {
		if err := s.checkScheme(r, where); err != nil {
			return err
		}
		if r.Verification.Hash == nil && !ignres.Compressed(*r) {
			return nil
		}
	}
	body, err := s.raw(ctx, *r, where)
	if err != nil {
		return err
	}
	if _, err := ignres.Copy(io.Discard, bytes.NewReader(body), *r, s.inflated); err != nil {
		return s.sourceError(*r, where, err)
	}
	if !remote {
		return nil
	}
	if !ignres.Compressed(*r) {
		if gz := gzipBytes(body); len(gz) < len(body) {
			body = gz
			c := "gzip"
			r.Compression = &c
		}
	}
	src := "data:;base64," + base64.StdEncoding.EncodeToString(body)
	r.Source = &src
	// Headers were for the remote server; they may hold credentials and
	// mean nothing for a data: URL.
	r.HTTPHeaders = nil
	return nil
}

func (s snapshotter) sourceError(r ign35types.Resource, where string, err error) error {
	src := "data: URL"
	if isRemote(*r.Source) {
		src = redact(*r.Source)
	}
	return fmt.Errorf("MachineConfig %q: %s: %s: %w", s.mc, where, src, err)
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

// raw returns the bytes of a source as stored: fetched (remote, at most
// Fetcher.MaxBytes) or decoded (data:), still compressed if they are.
func (s snapshotter) raw(ctx context.Context, r ign35types.Resource, where string) ([]byte, error) {
	src := *r.Source
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
		return b, nil
	case strings.HasPrefix(src, "data:"):
		b, err := ignres.DataURL(src)
		if err != nil {
			return nil, fmt.Errorf("MachineConfig %q: %s: %w", s.mc, where, err)
		}
		return b, nil
	default:
		if err := s.checkScheme(&r, where); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("MachineConfig %q: %s: %s: source is not a URL", s.mc, where, src)
	}
}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}
