package osimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// floorImage is an image kiln pushed, read back to be pushed again with
// the fewest requests the distribution API allows: the physical floor of
// a fast-path build, against which kiln's time is a multiple.
type floorImage struct {
	baseLayers         []v1.Hash
	layer, config, man []byte
	layerDigest        v1.Hash
	configDigest       v1.Hash
	mediaType          string
}

// readFloorImage reads ref's manifest, config and last layer (the one
// kiln appended); the others are the base's, mounted.
func readFloorImage(ref string) (*floorImage, error) {
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return nil, err
	}
	img, err := remote.Image(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", ref, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, err
	}
	f := &floorImage{mediaType: string(m.MediaType), configDigest: m.Config.Digest}
	if f.man, err = img.RawManifest(); err != nil {
		return nil, err
	}
	if f.config, err = img.RawConfigFile(); err != nil {
		return nil, err
	}
	last := m.Layers[len(m.Layers)-1]
	for _, l := range m.Layers[:len(m.Layers)-1] {
		f.baseLayers = append(f.baseLayers, l.Digest)
	}
	f.layerDigest = last.Digest
	l, err := img.LayerByDigest(last.Digest)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	f.layer, err = io.ReadAll(rc)
	return f, err
}

// push sends the floor's requests to an anonymous plain-HTTP registry: a
// mount POST per base layer, POST and PUT for the layer and for the
// config, one manifest PUT at tag. No ping, no HEAD.
func (f *floorImage) push(ctx context.Context, host, from, repo, tag string) error {
	base := "http://" + host + "/v2/" + repo
	for _, d := range f.baseLayers {
		q := url.Values{"mount": {d.String()}, "from": {from}}
		if _, err := floorDo(ctx, http.MethodPost, base+"/blobs/uploads/?"+q.Encode(), nil, "", http.StatusCreated); err != nil {
			return fmt.Errorf("mounting %s: %w", d, err)
		}
	}
	for _, blob := range []struct {
		d    v1.Hash
		body []byte
	}{{f.layerDigest, f.layer}, {f.configDigest, f.config}} {
		resp, err := floorDo(ctx, http.MethodPost, base+"/blobs/uploads/", nil, "", http.StatusAccepted)
		if err != nil {
			return err
		}
		loc, err := resp.Location()
		if err != nil {
			return err
		}
		q := loc.Query()
		q.Set("digest", blob.d.String())
		loc.RawQuery = q.Encode()
		if _, err := floorDo(ctx, http.MethodPut, loc.String(), blob.body, "application/octet-stream", http.StatusCreated); err != nil {
			return fmt.Errorf("uploading %s: %w", blob.d, err)
		}
	}
	_, err := floorDo(ctx, http.MethodPut, base+"/manifests/"+tag, f.man, f.mediaType, http.StatusCreated)
	return err
}

func floorDo(ctx context.Context, method, u string, body []byte, ctype string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != want {
		return nil, fmt.Errorf("%s %s: HTTP %d, want %d: %s", method, u, resp.StatusCode, want, msg)
	}
	return resp, nil
}
