package osimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// BenchmarkImageConfigChange measures a config-only change on a base of a
// given size: kiln's fast path (layer append, base blobs mounted) against
// `buildah bud` of a COPY-only Containerfile on the same base and registry,
// pushed to the same registry. buildah runs with fresh storage each time,
// as a build pod does: it pulls the base, builds, pushes.
//
// Sizes come from KILN_BENCH_IMAGE_SIZES (MB, comma-separated); `make
// bench` uses the small default, `make bench-image` 100 and 1024.
func BenchmarkImageConfigChange(b *testing.B) {
	sizes := os.Getenv("KILN_BENCH_IMAGE_SIZES")
	if sizes == "" {
		sizes = "16"
	}
	for _, s := range strings.Split(sizes, ",") {
		mb, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			b.Fatalf("KILN_BENCH_IMAGE_SIZES: %q is not a number of MB", s)
		}
		b.Run(fmt.Sprintf("base=%dMB", mb), func(b *testing.B) { benchConfigChange(b, mb) })
	}
}

func benchConfigChange(b *testing.B, mb int) {
	e := env.Start(b, env.Options{Registry: true, Buildah: true})
	ctx := context.Background()
	host := e.Registry.Host
	if err := pushRandomBase(host+"/bench/base:1", mb); err != nil {
		b.Fatal(err)
	}
	r := registry.Remote{Insecure: []string{host}}
	var fast, bud time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		motd := fmt.Sprintf("change %d at %d\n", i, time.Now().UnixNano())
		in := testInput(b, host, "bench/base:1", "bench/kiln", motd)

		start := time.Now()
		if _, err := Build(ctx, r, in); err != nil {
			b.Fatal(err)
		}
		fast += time.Since(start)

		start = time.Now()
		if err := budCopyOnly(ctx, b, host, motd, i); err != nil {
			b.Fatal(err)
		}
		bud += time.Since(start)
	}
	b.StopTimer()
	n := time.Duration(b.N)
	b.ReportMetric(float64(fast/n), "kiln-ns/op")
	b.ReportMetric(float64(bud/n), "buildah-ns/op")
	b.ReportMetric(float64(fast)/float64(bud), "kiln/buildah")
	fmt.Printf("bench-image base=%dMB  kiln fast path %8.2fs  buildah bud %8.2fs  ratio kiln/buildah %.4f (buildah %.0fx slower)\n",
		mb, (fast / n).Seconds(), (bud / n).Seconds(), float64(fast)/float64(bud), float64(bud)/float64(fast))
}

// budCopyOnly builds FROM the base with one COPY and pushes, with fresh
// buildah storage (a build pod's cold start).
func budCopyOnly(ctx context.Context, b *testing.B, host, motd string, i int) error {
	bd := env.NewBuildah(b, env.BuildahOptions{InsecureRegistries: []string{host}})
	dir := b.TempDir()
	cf := fmt.Sprintf("FROM %s/bench/base:1\nCOPY motd /etc/motd\n", host)
	if err := os.WriteFile(filepath.Join(dir, "Containerfile"), []byte(cf), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "motd"), []byte(motd), 0o644); err != nil {
		return err
	}
	local := fmt.Sprintf("localhost/bench-bud:%d", i)
	if _, err := bd.Run(ctx, "bud", "-q", "--layers", "--timestamp", "0", "--tls-verify=false", "-t", local, dir); err != nil {
		return err
	}
	_, err := bd.Run(ctx, "push", "-q", "--tls-verify=false", local, fmt.Sprintf("docker://%s/bench/bud:%d", host, i))
	if cerr := bd.Cleanup(); err == nil {
		err = cerr
	}
	return err
}

// pushRandomBase pushes a base image of mb MB in layers of at most 64 MB of
// random (incompressible) file content, generated as it is streamed.
func pushRandomBase(ref string, mb int) error {
	const layerMB = 64
	img := v1.Image(empty.Image)
	for i := 0; mb > 0; i++ {
		size := min(mb, layerMB)
		mb -= size
		seed := uint64(i + 1)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return randomTar(seed, int64(size)<<20), nil
		}, tarball.WithCompressionLevel(gzip.BestSpeed))
		if err != nil {
			return err
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg := cf.Config
	cfg.Labels = map[string]string{VersionLabel: "bench"}
	if img, err = mutate.Config(img, cfg); err != nil {
		return err
	}
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return err
	}
	return remote.Write(r, img)
}

// randomTar streams a tar holding one file of size random bytes.
func randomTar(seed uint64, size int64) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("usr/share/bench/blob-%d", seed), Mode: 0o644, Size: size, ModTime: layerTime})
		if err == nil {
			_, err = io.CopyN(tw, rand.NewChaCha8([32]byte{byte(seed)}), size)
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
