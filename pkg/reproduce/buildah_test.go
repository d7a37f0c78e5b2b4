package reproduce_test

import (
	"context"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/reproduce"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// A node image built on the buildah path (user Containerfile content on a
// busybox base) and signed as image-sign signs it reproduces in fresh
// storage: identical. The same image attested as built with other user
// content is not, and the differing file is named.
func TestReproduceBuildahPath(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s := &site{host: e.Registry.Host, repo: e.Registry.Host + "/kiln/bud", keys: env.CosignKeys(t),
		r: registry.Remote{Insecure: []string{e.Registry.Host}}}
	base := imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:1")
	build := func(content string) (string, trust.Inputs) {
		mc, err := imagebuild.ReadRendered(rendered(t, t.TempDir(), "hello"))
		if err != nil {
			t.Fatal(err)
		}
		in := imagebuild.BuildahInput{BuildInput: imagebuild.BuildInput{Base: base, Repository: s.repo, Pool: "worker",
			Rendered: mc, Source: imagebuild.DefaultSource}, Containerfile: content}
		res, err := imagebuild.BuildWithBuildah(ctx, buildah.Buildah{Env: e.Buildah.Env}, s.r, in)
		if err != nil {
			t.Fatal(err)
		}
		return res.Ref, res.Inputs
	}
	withEnv := func(o *reproduce.Options) { o.BuildahEnv = e.Buildah.Env }

	honest, honestIn := build("RUN echo user-content > /user-was-here\n")
	s.sign(t, honest, honestIn)
	got := s.reproduce(t, honest, withEnv)
	if got.code != 0 || got.out != "identical "+honest+"\n" || got.results["REPRODUCED"] != "true" {
		t.Fatalf("exit %d, results %v\n%s\n%s", got.code, got.results, got.out, got.err)
	}

	// A compromised builder attests the honest image's inputs for an image
	// built with other content.
	evil, _ := build("RUN echo owned > /user-was-here\n")
	s.sign(t, evil, honestIn)
	assertDiffers(t, s.reproduce(t, evil, withEnv), "/user-was-here")
}
