package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Reads go through the mirrors of r.Config in the order CRI-O tries them;
// writes go to the named registry only, never to a mirror.

// Get reads ref's descriptor (manifest included) from the first source that
// has it.
func (r Remote) Get(ctx context.Context, ref name.Reference) (*remote.Descriptor, error) {
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

func pull[T any](ctx context.Context, r Remote, ref name.Reference, get func(name.Reference, ...remote.Option) (T, error)) (T, error) {
	var zero T
	sources, err := r.Config.PullSources(ref)
	if err != nil {
		return zero, fmt.Errorf("resolving mirrors of %s: %w", ref, err)
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
		errs = append(errs, err)
	}
	if len(errs) == 1 {
		return zero, errs[0]
	}
	return zero, errors.Join(errs...)
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
func (r Remote) Tag(ctx context.Context, tag name.Tag, t remote.Taggable) error {
	opts, err := r.Options(ctx)
	if err != nil {
		return err
	}
	return remote.Tag(tag, t, opts...)
}
