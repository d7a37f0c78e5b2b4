package payload

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	imagev1 "github.com/openshift/api/image/v1"

	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/layers"
	"github.com/kiln-dev/kiln/pkg/registry"
)

// ImageReferencesPath is the file of a release image that names every
// component image of the payload: an ImageStream whose spec.tags map a
// component (rhel-coreos, driver-toolkit, …) to its pullspec by digest.
// It is what `oc adm release info` reads.
const ImageReferencesPath = "release-manifests/image-references"

// Component tags of the release payload kiln uses.
const (
	TagRHELCoreOS    = "rhel-coreos"
	TagDriverToolkit = "driver-toolkit"
)

// maxImageReferences bounds the file read into memory; a real one is about
// 100 KiB for ~200 tags.
const maxImageReferences = 16 << 20

// ErrNoImageReferences: the image has no release-manifests/image-references,
// so it is not a release image.
var ErrNoImageReferences = errors.New("no " + ImageReferencesPath + " (not a release image?)")

// ReleaseTags are the component images of one release image. The zero
// value has no tags. It is immutable: Lookup and Tags copy nothing out that
// a caller could change.
type ReleaseTags struct {
	release string
	tags    map[string]string
}

// Release is the release image the tags were read from.
func (r ReleaseTags) Release() string { return r.release }

// Lookup returns the pullspec of a component tag (e.g. TagDriverToolkit).
func (r ReleaseTags) Lookup(tag string) (string, error) {
	if ref, ok := r.tags[tag]; ok {
		return ref, nil
	}
	return "", fmt.Errorf("release image %s: %s has no tag %q", r.release, ImageReferencesPath, tag)
}

// Tags lists the tag names, sorted.
func (r ReleaseTags) Tags() []string {
	out := make([]string, 0, len(r.tags))
	for t := range r.tags {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// ReleaseImages reads the component images of a release image (ClusterVersion
// status.desired.image): its release-manifests/image-references file, looked
// for from the top layer down so the last layer that has it wins, as in the
// flattened filesystem. Only the layers above the file are read. The
// release image is read through r's mirrors (a disconnected cluster's
// release is on its mirror).
func ReleaseImages(ctx context.Context, releaseRef string, r registry.Remote) (ReleaseTags, error) {
	img, err := releaseImage(ctx, r, releaseRef)
	if err != nil {
		return ReleaseTags{}, fmt.Errorf("reading release image %q: %w", releaseRef, err)
	}
	data, err := ReadImageFile(img, ImageReferencesPath)
	if err != nil {
		return ReleaseTags{}, fmt.Errorf("reading release image %q: %w", releaseRef, err)
	}
	tags, err := ParseImageReferences(data)
	if err != nil {
		return ReleaseTags{}, fmt.Errorf("reading release image %q: %s: %w", releaseRef, ImageReferencesPath, err)
	}
	return ReleaseTags{release: releaseRef, tags: tags}, nil
}

// DriverToolkitImage is the release image's driver-toolkit pullspec
// (KMM's DTK_AUTO).
func DriverToolkitImage(ctx context.Context, releaseRef string, r registry.Remote) (string, error) {
	tags, err := ReleaseImages(ctx, releaseRef, r)
	if err != nil {
		return "", err
	}
	return tags.Lookup(TagDriverToolkit)
}

func releaseImage(ctx context.Context, r registry.Remote, ref string) (v1.Image, error) {
	parsed, err := r.ParseRef(ref)
	if err != nil {
		return nil, err
	}
	return r.Image(ctx, parsed)
}

// ReadImageFile returns one regular file of an image's flattened filesystem
// (p without a leading slash), reading layers top down only as far as the
// one that holds it.
//
// Not mutate.Extract: it ignores opaque-folder markers (.wh..wh..opq, which
// buildah writes when a RUN replaces a folder) and so would return a file
// the flattened image does not have (TestExtractIgnoresOpaqueFolders).
func ReadImageFile(img v1.Image, p string) ([]byte, error) {
	data, err := ReadImageFileLimit(img, p, maxImageReferences)
	if errors.Is(err, ErrNotInImage) && path.Clean(strings.TrimPrefix(p, "/")) == ImageReferencesPath {
		return nil, ErrNoImageReferences
	}
	return data, err
}

// ErrNotInImage is wrapped when the flattened image has no such file.
var ErrNotInImage = errors.New("not in the image")

// ReadImageFileLimit is ReadImageFile for a file of at most limit bytes:
// a larger one is an error, and nothing of it is read into memory.
func ReadImageFileLimit(img v1.Image, p string, limit int64) ([]byte, error) {
	p = path.Clean(strings.TrimPrefix(p, "/"))
	var data []byte
	found := false
	err := layers.Walk(img, func(n string, h *tar.Header, r io.Reader) error {
		if n != p {
			return nil
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("%s is not a regular file (tar type %q)", p, h.Typeflag)
		}
		if h.Size > limit {
			return fmt.Errorf("%s is %d bytes, more than the %d kiln reads", p, h.Size, limit)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		data, found = b, true
		return layers.ErrStop
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("/%s: %w", p, ErrNotInImage)
	}
	return data, nil
}

// ParseImageReferences reads an image-references ImageStream into tag name
// → pullspec. Every tag must name a DockerImage; a tag named twice with two
// different pullspecs is refused (which one would DTK_AUTO be?).
func ParseImageReferences(data []byte) (map[string]string, error) {
	var is imagev1.ImageStream
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&is); err != nil {
		return nil, fmt.Errorf("decoding the ImageStream: %w", err)
	}
	if is.Kind != "ImageStream" {
		return nil, fmt.Errorf("kind is %q, want ImageStream", is.Kind)
	}
	if len(is.Spec.Tags) == 0 {
		return nil, errors.New("spec.tags is empty")
	}
	out := make(map[string]string, len(is.Spec.Tags))
	for i, t := range is.Spec.Tags {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("spec.tags[%d]: name is empty", i)
		case t.From == nil || t.From.Name == "":
			return nil, fmt.Errorf("spec.tags[%d] %q: from.name is empty", i, t.Name)
		case t.From.Kind != "DockerImage":
			return nil, fmt.Errorf("spec.tags[%d] %q: from.kind is %q, want DockerImage", i, t.Name, t.From.Kind)
		}
		if _, err := imageref.Parse(t.From.Name); err != nil {
			return nil, fmt.Errorf("spec.tags[%d] %q: from.name %q: %w", i, t.Name, t.From.Name, err)
		}
		if prev, ok := out[t.Name]; ok && prev != t.From.Name {
			return nil, fmt.Errorf("spec.tags[%d] %q: named twice, as %s and %s", i, t.Name, prev, t.From.Name)
		}
		out[t.Name] = t.From.Name
	}
	return out, nil
}
