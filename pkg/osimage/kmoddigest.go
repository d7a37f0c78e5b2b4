package osimage

import (
	"errors"
	"fmt"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/work"
)

// validKmodDigests refuses a --kmod-digest that is not sha256:<64 hex
// digits>: every digest is written into the image's inputs and attested.
func validKmodDigests(digests []string) error {
	var errs []error
	for _, d := range digests {
		if h, err := v1.NewHash(d); err != nil || h.Algorithm != "sha256" {
			errs = append(errs, fmt.Errorf("--kmod-digest %q: want sha256:<64 hex digits>", d))
		}
	}
	return errors.Join(errs...)
}

// checkKmodDigests refuses a --kmod-digest that this run's kmod stages did
// not record in the work folder (kmod/sign.json, else kmod/build.json):
// image-build attests the kmod digests it is given as the image's inputs,
// so a digest from anywhere else would be a claim nothing backs. The kmod
// report itself is checked too: its image must be a digest reference
// whose digest is the one recorded.
func checkKmodDigests(ws work.Workspace, given []string) (work.KmodImage, bool, error) {
	k, ok, err := ws.KmodImage()
	if err != nil {
		return k, false, err
	}
	if ok {
		ref, err := name.NewDigest(k.Image)
		if err != nil || ref.DigestStr() != k.Digest {
			return k, false, fmt.Errorf("the work folder's kmod report: image %q and digest %q: want repository@sha256:… with that digest", k.Image, k.Digest)
		}
	}
	for _, d := range given {
		if !ok {
			return k, false, fmt.Errorf("--kmod-digest %s: no kmod image is recorded in the work folder (kmod/sign.json or kmod/build.json), so nothing backs it", d)
		}
		if d != k.Digest {
			return k, false, fmt.Errorf("--kmod-digest %s: the work folder's kmod image is %s", d, k.Digest)
		}
	}
	return k, ok, nil
}

// withKmodDigest adds d to digests once.
func withKmodDigest(digests []string, d string) []string {
	if slices.Contains(digests, d) {
		return digests
	}
	return append(digests, d)
}
