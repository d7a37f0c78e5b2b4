package osimage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestImageBuildStepBuildahDispatch checks that image-build takes the
// buildah path for user Containerfile content.
func TestImageBuildStepBuildahDispatch(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:1")
	for _, kv := range e.Buildah.Env {
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "CONTAINERS_") || k == "TMPDIR") {
			t.Setenv(k, v)
		}
	}
	work, results := t.TempDir(), t.TempDir()
	writeRendered(t, work, imagetest.RenderedMC(t, "rendered-worker-abc", imagetest.SampleConfig(t, "hi")))
	user := filepath.Join(t.TempDir(), "Containerfile")
	os.WriteFile(user, []byte("RUN echo agent > /agent\n"), 0o644)
	o := &BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "worker"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
		Base:            e.Registry.Ref("base/busybox:1"), Repository: e.Registry.Ref("kiln/os"), Source: imagebuild.DefaultSource,
		ContainerfilePath: user, BuildahBin: "buildah"}
	var out bytes.Buffer
	if err := o.Run(ctx, step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "buildah path") {
		t.Errorf("output does not mention the buildah path:\n%s", out.String())
	}
	img, err := remote.Image(imagetest.MustRef(t, readFile(t, filepath.Join(results, "IMAGE_URL"))+"@"+readFile(t, filepath.Join(results, "IMAGE_DIGEST"))))
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	if files := imagetest.LayerFiles(t, layers[len(layers)-1]); files["agent"] != "agent\n" {
		t.Errorf("last layer is not the user's: %v", files)
	}
}
