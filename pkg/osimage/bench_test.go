package osimage

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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

	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// BenchmarkImageConfigChange measures a config-only change on a base of a
// given size and layer count, four programs against one registry in each
// round, one after the other: the built `kiln-steps image-build` (fast
// path: base layers read once by the node import check, then mounted, one
// layer appended), the same build by kiln-image-build (the stage linked
// alone, which starts without the other stages' package inits),
// `buildah bud` of a COPY-only Containerfile with fresh storage (a build
// pod's cold start: pull, build, push), and the floor, the requests any
// such push needs sent directly over HTTP (a mount per base layer, the
// new layer, the config, the manifest) for the image kiln pushed in that
// round.
//
// KILN_BENCH_IMAGE_SIZES (MB, comma-separated, default 16),
// KILN_BENCH_IMAGE_LAYERS (base layer counts, default 2) and
// KILN_BENCH_IMAGE_ROUNDS (default 2) choose the runs; `make bench-image`
// sets larger ones. Medians are printed with the load average.
func BenchmarkImageConfigChange(b *testing.B) {
	sizes := benchInts(b, "KILN_BENCH_IMAGE_SIZES", "16")
	layers := benchInts(b, "KILN_BENCH_IMAGE_LAYERS", "2")
	rounds := benchInts(b, "KILN_BENCH_IMAGE_ROUNDS", "2")[0]
	steps := []string{env.BuildBinary(b, "./cmd/kiln-steps"), "image-build"}
	alone := []string{env.BuildBinary(b, "./cmd/kiln-image-build")}
	kiln := map[[2]int]time.Duration{} // {MB, layers} → kiln's median
	for _, mb := range sizes {
		for _, n := range layers {
			b.Run(fmt.Sprintf("base=%dMB/layers=%d", mb, n), func(b *testing.B) {
				kiln[[2]int{mb, n}] = benchConfigChange(b, steps, alone, mb, n, rounds)
			})
		}
	}
	printGrowth(kiln, sizes, layers)
}

func benchInts(b *testing.B, key, def string) []int {
	s := os.Getenv(key)
	if s == "" {
		s = def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("%s: %q is not a positive number", key, f)
		}
		out = append(out, v)
	}
	return out
}

// benchConfigChange runs the rounds on a fresh registry and returns kiln's
// median; steps and alone are the two image-build commands (binary, then
// subcommand if any).
func benchConfigChange(b *testing.B, steps, alone []string, mb, layers, rounds int) time.Duration {
	e := env.Start(b, env.Options{Registry: true, Buildah: true})
	ctx := context.Background()
	host := e.Registry.Host
	if err := pushRandomBase(host+"/bench/base:1", mb, layers); err != nil {
		b.Fatal(err)
	}
	key := imagetest.NewCosignKey(b)
	var kiln, single, bud, floor []time.Duration
	load0 := loadAvg(b)
	b.ResetTimer()
	for range b.N {
		for range rounds {
			i := len(kiln)
			motd := fmt.Sprintf("change %d at %d\n", i, time.Now().UnixNano())
			ref, d, err := runImageBuild(ctx, b, steps, host, key.PubPath, motd)
			if err != nil {
				b.Fatal(err)
			}
			kiln = append(kiln, d)
			if _, d, err = runImageBuild(ctx, b, alone, host, key.PubPath, "alone "+motd); err != nil {
				b.Fatal(err)
			}
			single = append(single, d)

			start := time.Now()
			if err := budCopyOnly(ctx, b, host, motd, i); err != nil {
				b.Fatal(err)
			}
			bud = append(bud, time.Since(start))

			img, err := readFloorImage(ref)
			if err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			if err := img.push(ctx, host, "bench/base", "bench/floor", fmt.Sprintf("floor-%d", i)); err != nil {
				b.Fatal(err)
			}
			floor = append(floor, time.Since(start))
		}
	}
	b.StopTimer()
	k, bd, f := median(kiln), median(bud), median(floor)
	fmt.Printf("bench-image base=%dMB layers=%d rounds=%d load=%s→%s\n", mb, layers, len(kiln), load0, loadAvg(b))
	fmt.Printf("  kiln %s  buildah %s (%.1fx kiln)  floor %s (kiln %.1fx floor)\n",
		secs(k), secs(bd), float64(bd)/float64(k), secs(f), float64(k)/float64(f))
	a := median(single)
	fmt.Printf("  kiln-image-build %s (%.1fx kiln; buildah %.1fx kiln-image-build)\n", secs(a), float64(a)/float64(k), float64(bd)/float64(a))
	return k
}

// runImageBuild runs image-build as argv (`kiln-steps image-build` or
// `kiln-image-build`) on a fresh workspace whose rendered config writes
// motd, and returns the image it pushed (checked to be a build, not a
// reuse) and how long the program ran.
func runImageBuild(ctx context.Context, b *testing.B, argv []string, host, pubKey, motd string) (string, time.Duration, error) {
	work, results := b.TempDir(), b.TempDir()
	mc := imagetest.RenderedMC(b, "rendered-worker-bench", imagetest.SampleConfig(b, motd))
	raw, err := json.Marshal(mc)
	if err != nil {
		return "", 0, err
	}
	if err := os.MkdirAll(filepath.Join(work, "render"), 0o755); err != nil {
		return "", 0, err
	}
	if err := os.WriteFile(filepath.Join(work, "render", "rendered.json"), raw, 0o644); err != nil {
		return "", 0, err
	}
	args := append(argv[1:len(argv):len(argv)], "--pool", "worker", "--work", work, "--results-dir", results,
		"--base", host+"/bench/base:1", "--repository", host+"/bench/kiln", "--insecure-registry", host,
		"--public-key", pubKey)
	cmd := exec.CommandContext(ctx, argv[0], args...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w\n%s", strings.Join(argv, " "), err, out)
	}
	res := map[string]string{}
	for _, k := range []string{"IMAGE_URL", "IMAGE_DIGEST", "REUSED"} {
		v, err := os.ReadFile(filepath.Join(results, k))
		if err != nil {
			return "", 0, fmt.Errorf("reading result %s: %w\n%s", k, err, out)
		}
		res[k] = string(v)
	}
	if res["REUSED"] != "false" {
		return "", 0, fmt.Errorf("%s reused an image in a benchmark of builds: %v\n%s", strings.Join(argv, " "), res, out)
	}
	return res["IMAGE_URL"] + "@" + res["IMAGE_DIGEST"], d, nil
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func secs(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// loadAvg is the 1-minute load average of /proc/loadavg.
func loadAvg(b *testing.B) string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		b.Fatalf("/proc/loadavg: %q", raw)
	}
	return f[0]
}

// printGrowth prints how kiln's time grows with the base's size and layer
// count, for the pairs the run has.
func printGrowth(kiln map[[2]int]time.Duration, sizes, layers []int) {
	lo, hi := slices.Min(sizes), slices.Max(sizes)
	few, many := slices.Min(layers), slices.Max(layers)
	if lo != hi {
		for _, n := range layers {
			if a, z := kiln[[2]int{lo, n}], kiln[[2]int{hi, n}]; a > 0 && z > 0 {
				fmt.Printf("bench-image kiln %dMB vs %dMB (layers=%d): %.2fx\n", hi, lo, n, float64(z)/float64(a))
			}
		}
	}
	if few != many {
		for _, mb := range sizes {
			if a, z := kiln[[2]int{mb, few}], kiln[[2]int{mb, many}]; a > 0 && z > 0 {
				fmt.Printf("bench-image kiln %d vs %d layers (base=%dMB): %.2fx\n", many, few, mb, float64(z)/float64(a))
			}
		}
	}
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

// pushRandomBase pushes a base image of mb MB in the given number of
// layers of random (incompressible) file content, generated as it is
// streamed.
func pushRandomBase(ref string, mb, layers int) error {
	img := v1.Image(empty.Image)
	total := int64(mb) << 20
	for i := range layers {
		size := total / int64(layers)
		if i == layers-1 {
			size = total - size*int64(layers-1)
		}
		seed, last := uint64(i+1), i == layers-1
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return randomTar(seed, size, last), nil
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

// benchLayerTime is the modification time of randomTar's entries (the
// fast path's layer time).
var benchLayerTime = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// randomTar streams a tar holding one file of size random bytes.
// With kernel, it also holds the stand-in vmlinuz the node import check
// requires of a base.
func randomTar(seed uint64, size int64, kernel bool) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("usr/share/bench/blob-%d", seed), Mode: 0o644, Size: size, ModTime: benchLayerTime})
		if err == nil {
			_, err = io.CopyN(tw, rand.NewChaCha8([32]byte{byte(seed)}), size)
		}
		if err == nil && kernel {
			body := []byte("stand-in kernel\n")
			if err = tw.WriteHeader(&tar.Header{Name: "usr/lib/modules/" + env.StandInKernel + "/vmlinuz", Mode: 0o644, Size: int64(len(body)), ModTime: benchLayerTime}); err == nil {
				_, err = tw.Write(body)
			}
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}
