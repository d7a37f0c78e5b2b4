package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"k8s.io/apimachinery/pkg/util/wait"
)

// PushImage pushes img to ref (a tag or a digest in its own registry, never
// a mirror) with the fewest round trips the distribution API allows: a
// base layer in the same registry is mounted with one POST and no HEAD
// before it (a registry answers 201 for a blob the repository already
// has; a refused mount leaves an upload), the other blobs are uploaded in
// one POST and one PUT each, and the manifest is PUT once, at ref.
// go-containerregistry's Write asks HEAD for every blob first and a tag
// needs a second manifest PUT there. Every request carries ref's
// repository's credential (see newPusher).
//
// Putting the manifest at the tag directly keeps "the tag goes last": a
// registry refuses a manifest whose blobs it does not hold, so the tag
// never names an incomplete image. The digest the registry reports must be
// the one computed here.
func (r Remote) PushImage(ctx context.Context, ref name.Reference, img v1.Image) error {
	p, err := r.newPusher(ctx, ref.Context(), mountSources(img))
	if err != nil {
		return err
	}
	return p.image(ctx, ref, img, map[v1.Hash]bool{})
}

// PushIndex pushes idx like PushImage: every platform image by digest,
// then the index at ref.
func (r Remote) PushIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return fmt.Errorf("reading index manifest: %w", err)
	}
	var children []v1.Image
	var sources []name.Repository
	for _, d := range im.Manifests {
		if !d.MediaType.IsImage() {
			return fmt.Errorf("pushing index: manifest %s has media type %s, only images are supported", d.Digest, d.MediaType)
		}
		child, err := idx.Image(d.Digest)
		if err != nil {
			return fmt.Errorf("reading platform image %s: %w", d.Digest, err)
		}
		children = append(children, child)
		sources = append(sources, mountSources(child)...)
	}
	p, err := r.newPusher(ctx, ref.Context(), sources)
	if err != nil {
		return err
	}
	done := map[v1.Hash]bool{}
	for i, child := range children {
		if err := p.image(ctx, ref.Context().Digest(im.Manifests[i].Digest.String()), child, done); err != nil {
			return err
		}
	}
	return p.manifest(ctx, ref, idx)
}

// pusher sends the requests of a push to one repository.
type pusher struct {
	r      Remote
	repo   name.Repository
	client *http.Client
}

// mountSources are the repositories img's layers can be mounted from.
func mountSources(img v1.Image) []name.Repository {
	layers, err := img.Layers()
	if err != nil {
		return nil
	}
	var out []name.Repository
	for _, l := range layers {
		if ml, ok := l.(*remote.MountableLayer); ok {
			out = append(out, ml.Reference.Context())
		}
	}
	return out
}

// newPusher authenticates once for pushing to repo and pulling from the
// mount sources in its registry.
//
// Every request of the push goes to repo's endpoint and carries repo's
// credential, found as for any other repository (the most specific auth
// file entry, then the host's): a cross-repository mount too, and a token
// request asks with it for pull on the mount sources. This is what
// containers/image does: one client with the destination's credential,
// and an extra pull scope for the repository a blob is mounted from
// (TryReusingBlobWithOptions and mountBlob in
// https://github.com/containers/container-libs/blob/main/image/docker/docker_image_dest.go).
// A source's own credential is never sent to
// repo; when repo's credential may not read a source, the registry refuses
// the mount and the layer is read from the source with the source's
// credential and uploaded (see layer).
func (r Remote) newPusher(ctx context.Context, repo name.Repository, sources []name.Repository) (*pusher, error) {
	kc, err := r.Keychain()
	if err != nil {
		return nil, err
	}
	auth, err := authn.Resolve(ctx, kc, repo)
	if err != nil {
		return nil, fmt.Errorf("resolving credentials for %s: %w", repo, err)
	}
	scopes := []string{repo.Scope(transport.PushScope)}
	seen := map[string]bool{scopes[0]: true}
	for _, s := range sources {
		if sc := s.Scope(transport.PullScope); s.RegistryStr() == repo.RegistryStr() && !seen[sc] {
			seen[sc] = true
			scopes = append(scopes, sc)
		}
	}
	var t http.RoundTripper
	err = r.retry(ctx, func() error {
		t, err = transport.NewWithContext(ctx, repo.Registry, auth, transport.NewUserAgent(r.transport(), "kiln"), scopes)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &pusher{r: r, repo: repo, client: &http.Client{Transport: t}}, nil
}

// image pushes img's blobs (those not in done) and its manifest at ref.
// The config is uploaded while the layers are: the blobs are independent
// and only the manifest needs them all, so a push costs the round trips of
// its slowest blob, not their sum.
func (p *pusher) image(ctx context.Context, ref name.Reference, img v1.Image, done map[v1.Hash]bool) error {
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("reading layers: %w", err)
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return fmt.Errorf("reading config: %w", err)
	}
	h, err := img.ConfigName()
	if err != nil {
		return fmt.Errorf("reading config digest: %w", err)
	}
	var cfgErr error
	var wg sync.WaitGroup
	if !done[h] {
		done[h] = true
		open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(cfg)), nil }
		wg.Go(func() {
			if err := p.r.retry(ctx, func() error { return p.upload(ctx, "", h, int64(len(cfg)), open) }); err != nil {
				cfgErr = fmt.Errorf("pushing config %s: %w", h, err)
			}
		})
	}
	err = p.layers(ctx, layers, done)
	wg.Wait()
	if err := errors.Join(err, cfgErr); err != nil {
		return err
	}
	return p.manifest(ctx, ref, img)
}

// pushJobs is how many layers are mounted or uploaded at once, as in
// go-containerregistry's Write: mounts are independent, and against a
// distant registry each is a round trip.
const pushJobs = 4

// layers pushes the layers not in done, pushJobs at a time, and adds them
// to done.
func (p *pusher) layers(ctx context.Context, layers []v1.Layer, done map[v1.Hash]bool) error {
	var todo []v1.Layer
	var digests []v1.Hash
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return fmt.Errorf("reading layer digest: %w", err)
		}
		if !done[h] {
			done[h] = true
			todo, digests = append(todo, l), append(digests, h)
		}
	}
	errs := make([]error, len(todo))
	sem := make(chan struct{}, pushJobs)
	var wg sync.WaitGroup
	for i, l := range todo {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := p.r.retry(ctx, func() error { return p.layer(ctx, digests[i], l) }); err != nil {
				errs[i] = fmt.Errorf("pushing layer %s: %w", digests[i], err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// layer mounts a layer of the same registry, checks for one of another
// registry (a HEAD is cheaper than downloading it), and uploads the rest.
// A refused mount is not an error: the layer is uploaded instead, as
// containers/image does when a mount fails.
func (p *pusher) layer(ctx context.Context, h v1.Hash, l v1.Layer) error {
	size, err := l.Size()
	if err != nil {
		return err
	}
	location := ""
	if ml, ok := l.(*remote.MountableLayer); ok {
		from := ml.Reference.Context()
		if from.RegistryStr() == p.repo.RegistryStr() {
			mounted := false
			location, mounted, err = p.start(ctx, url.Values{"mount": {h.String()}, "from": {from.RepositoryStr()}})
			switch {
			case err == nil && mounted:
				return nil
			case err != nil && !mountRefused(err):
				return err
			}
		} else if ok, err := p.exists(ctx, h); err != nil || ok {
			return err
		}
	}
	return p.upload(ctx, location, h, size, l.Compressed)
}

// mountRefused reports a registry's "no" to a mount: the target's
// credential may not read the source (401, 403), or the registry does not
// know the source (404). Each leaves an upload to do; a transient error or
// any other answer is the push's error.
func mountRefused(err error) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	switch te.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		return true
	}
	return false
}

// start opens an upload (or mounts, with mount and from): its location,
// or mounted when the registry answered 201.
func (p *pusher) start(ctx context.Context, q url.Values) (string, bool, error) {
	u := p.url("/blobs/uploads/")
	u.RawQuery = q.Encode()
	resp, err := p.do(ctx, http.MethodPost, u.String(), nil, -1, "", http.StatusCreated, http.StatusAccepted)
	if err != nil {
		return "", false, err
	}
	if resp.StatusCode == http.StatusCreated {
		return "", true, nil
	}
	loc, err := resp.Location()
	if err != nil {
		return "", false, fmt.Errorf("upload location: %w", err)
	}
	return loc.String(), false, nil
}

// upload sends a blob in one PUT to location (a new upload when empty).
func (p *pusher) upload(ctx context.Context, location string, h v1.Hash, size int64, open func() (io.ReadCloser, error)) error {
	if location == "" {
		var err error
		if location, _, err = p.start(ctx, nil); err != nil {
			return err
		}
	}
	u, err := url.Parse(location)
	if err != nil {
		return fmt.Errorf("upload location %q: %w", location, err)
	}
	q := u.Query()
	q.Set("digest", h.String())
	u.RawQuery = q.Encode()
	body, err := open()
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = p.do(ctx, http.MethodPut, u.String(), body, size, "application/octet-stream", http.StatusCreated)
	return err
}

func (p *pusher) exists(ctx context.Context, h v1.Hash) (bool, error) {
	u := p.url("/blobs/" + h.String())
	resp, err := p.do(ctx, http.MethodHead, u.String(), nil, -1, "", http.StatusOK, http.StatusNotFound)
	if err != nil {
		return false, err
	}
	return resp.StatusCode == http.StatusOK, nil
}

// manifest PUTs t's manifest at ref and checks the digest the registry
// names, when it names one.
func (p *pusher) manifest(ctx context.Context, ref name.Reference, t interface {
	RawManifest() ([]byte, error)
	MediaType() (types.MediaType, error)
}) error {
	raw, err := t.RawManifest()
	if err != nil {
		return fmt.Errorf("reading manifest: %w", err)
	}
	mt, err := t.MediaType()
	if err != nil {
		return fmt.Errorf("reading manifest media type: %w", err)
	}
	want, _, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	u := p.url("/manifests/" + ref.Identifier())
	return p.r.retry(ctx, func() error {
		resp, err := p.do(ctx, http.MethodPut, u.String(), bytes.NewReader(raw), int64(len(raw)), string(mt), http.StatusOK, http.StatusCreated, http.StatusAccepted)
		if err != nil {
			return fmt.Errorf("putting manifest %s: %w", ref, err)
		}
		if got := resp.Header.Get("Docker-Content-Digest"); got != "" && got != want.String() {
			return fmt.Errorf("putting manifest %s: the registry stored it as %s, its content is %s", ref, got, want)
		}
		return nil
	})
}

func (p *pusher) url(path string) url.URL {
	return url.URL{Scheme: p.repo.Scheme(), Host: p.repo.RegistryStr(), Path: "/v2/" + p.repo.RepositoryStr() + path}
}

// do sends one request and checks its status; the body of the answer is
// drained and closed (only headers are used).
func (p *pusher) do(ctx context.Context, method, u string, body io.Reader, size int64, ctype string, want ...int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	if size >= 0 {
		req.ContentLength = size
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := transport.CheckError(resp, want...); err != nil {
		resp.Body.Close()
		return nil, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp, nil
}

// retry runs f again after a transient failure, with r's backoff: at most
// Steps tries. When it gives up, or ctx ends, f's last error is returned.
func (r Remote) retry(ctx context.Context, f func() error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, wait.Backoff(r.backoff()), func(context.Context) (bool, error) {
		last = f()
		if last != nil && !retryable(last) {
			return false, last
		}
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
