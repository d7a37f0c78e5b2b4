package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Every registry access of kiln goes through this package
// (boundary_test.go fails on a direct go-containerregistry remote call
// elsewhere), so mirrors, credentials, CAs and insecure flags are applied
// the same way everywhere.
//
// Reads of images kiln consumes (the payload's images, a custom or kmod
// base, the DTK, the release image) go through the mirrors of r.Config in
// the order CRI-O tries them: Get, Head, Image, Index. Reads of what kiln
// itself wrote (fingerprint tags, a kmod target, signatures) go to the
// named registry: HeadNamed, ImageNamed. Writes go to the named registry
// only, never to a mirror.

// Descriptor is a manifest read from a registry, with the manifest body.
type Descriptor = remote.Descriptor

// Taggable is what Tag can point a tag at: an image or an index.
type Taggable = remote.Taggable

// Get reads ref's descriptor (manifest included) from the first source that
// has it.
func (r Remote) Get(ctx context.Context, ref name.Reference) (*Descriptor, error) {
	return pull(ctx, r, ref, remote.Get)
}

// Head reads ref's descriptor without its manifest body.
func (r Remote) Head(ctx context.Context, ref name.Reference) (*v1.Descriptor, error) {
	return pull(ctx, r, ref, remote.Head)
}

// Image reads ref as an image.
func (r Remote) Image(ctx context.Context, ref name.Reference) (v1.Image, error) {
	return pull(ctx, r, ref, remote.Image)
}

// Index reads ref as an image index.
func (r Remote) Index(ctx context.Context, ref name.Reference) (v1.ImageIndex, error) {
	return pull(ctx, r, ref, remote.Index)
}

// HeadNamed reads ref's descriptor from ref's own registry, never from a
// mirror: for what kiln pushed there itself, where a mirror may lag behind
// or hold something else under the same tag.
func (r Remote) HeadNamed(ctx context.Context, ref name.Reference) (*v1.Descriptor, error) {
	return named(ctx, r, ref, remote.Head)
}

// ImageNamed reads ref as an image from ref's own registry, like HeadNamed.
func (r Remote) ImageNamed(ctx context.Context, ref name.Reference) (v1.Image, error) {
	return named(ctx, r, ref, remote.Image)
}

func pull[T any](ctx context.Context, r Remote, ref name.Reference, get func(name.Reference, ...remote.Option) (T, error)) (T, error) {
	var zero T
	sources, err := r.sources(ref)
	if err != nil {
		return zero, err
	}
	opts, err := r.Options(ctx)
	if err != nil {
		return zero, err
	}
	var errs []error
	for _, s := range sources {
		v, err := get(s.Ref, opts...)
		if err == nil {
			return v, nil
		}
		if len(sources) > 1 {
			err = fmt.Errorf("%s: %w", s.Ref, err)
		}
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return zero, errs[0]
	}
	return zero, errors.Join(errs...)
}

// sources lists where ref is pulled from. A mirror is parsed again with
// ParseRef so that an insecure (plain HTTP) mirror is reached as such.
func (r Remote) sources(ref name.Reference) ([]Source, error) {
	if r.Config == nil {
		return []Source{{Ref: ref}}, nil
	}
	sources, err := r.Config.PullSources(ref)
	if err != nil {
		return nil, fmt.Errorf("resolving mirrors of %s: %w", ref, err)
	}
	for i, s := range sources {
		if !s.Mirror {
			continue
		}
		if sources[i].Ref, err = r.ParseRef(s.Ref.String()); err != nil {
			return nil, fmt.Errorf("resolving mirrors of %s: %w", ref, err)
		}
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("resolving mirrors of %s: no source to pull from (the source is blocked and no mirror matches)", ref)
	}
	return sources, nil
}

func named[T any](ctx context.Context, r Remote, ref name.Reference, get func(name.Reference, ...remote.Option) (T, error)) (T, error) {
	opts, err := r.Options(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	return get(ref, opts...)
}

// Write pushes img to ref (its own registry, never a mirror).
func (r Remote) Write(ctx context.Context, ref name.Reference, img v1.Image) error {
	opts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	return remote.Write(ref, img, opts...)
}

// WriteIndex pushes idx to ref.
func (r Remote) WriteIndex(ctx context.Context, ref name.Reference, idx v1.ImageIndex) error {
	opts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	return remote.WriteIndex(ref, idx, opts...)
}

// Tag points tag at t (an image or index already in tag's repository).
func (r Remote) Tag(ctx context.Context, tag name.Tag, t Taggable) error {
	opts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	return remote.Tag(tag, t, opts...)
}
