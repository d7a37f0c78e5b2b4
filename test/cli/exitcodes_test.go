// Package cli drives kiln's two binaries, built once, as a user or a Task
// runs them, and checks that each exit code means what the table
// (pkg/exitcode.ExitCodes) says.
package cli

import (
	"bytes"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/cosign/v2/pkg/cosign"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

// steps and trigger are the binaries TestMain builds.
var steps, trigger string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kiln-cli-")
	if err != nil {
		log.Fatal(err)
	}
	steps, trigger = filepath.Join(dir, "kiln-steps"), filepath.Join(dir, "kiln-trigger")
	// One go build for both: they share almost every package. Without
	// the symbol table and DWARF (-s -w) linking takes half the time.
	build := exec.Command("go", "build", "-tags="+env.BuildTags, "-trimpath", "-ldflags=-s -w", "-o", dir+"/", "./cmd/kiln-steps", "./cmd/kiln-trigger")
	build.Dir = env.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		log.Fatalf("building the binaries: %v\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// outcome is what a row checks: the exit code, and the key phrase of
// stderr (the whole stderr when the phrase is missing, to show why).
type outcome struct {
	Code int
	Says string
}

// run runs bin with args and returns its outcome against phrase.
func run(t *testing.T, bin string, args []string, phrase string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// No environment defaults (KILN_*, REGISTRY_AUTH_FILE) from the
	// machine running the test; HOME keeps the default keychain empty.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s %v: %v", bin, args, err)
	}
	says := phrase
	if !strings.Contains(stderr.String(), phrase) {
		says = stderr.String()
	}
	return outcome{code, says}
}

// registries are the registries the rows talk to.
type registries struct {
	good     string // go-containerregistry's in-process registry
	stopped  string // a port nothing listens on any more
	failing  string // answers 500 to everything
	denying  string // answers 401 to everything
	unsigned string // an image in good, never signed
	signed   string // an image in good, signed by keyA
	keyA     string // cosign.pub of the key that signed
	keyB     string // cosign.pub of another key
}

func newRegistries(t *testing.T) registries {
	t.Helper()
	good := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(good.Close)
	status := func(code int) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, http.StatusText(code), code)
		}))
		t.Cleanup(s.Close)
		return strings.TrimPrefix(s.URL, "http://")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stopped := l.Addr().String()
	l.Close()

	r := registries{good: strings.TrimPrefix(good.URL, "http://"), stopped: stopped, failing: status(500), denying: status(401)}
	r.unsigned = push(t, r.good+"/test/os:unsigned")
	r.signed = push(t, r.good+"/test/os:signed")
	r.keyA = env.CosignKeys(t)
	other, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("other"), nil })
	if err != nil {
		t.Fatal(err)
	}
	r.keyB = filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(r.keyB, other.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	priv, err := os.ReadFile(filepath.Join(r.keyA, "cosign.key"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := trust.NodeImage{Pool: "worker", RenderedName: "rendered-worker-1", RenderedHash: "sha256:" + strings.Repeat("b", 64),
		BaseImage: r.good + "/base/os@sha256:" + strings.Repeat("c", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sign.Sign(context.Background(), registry.Remote{Insecure: []string{r.good}},
		sign.SignInput{Image: r.signed, Key: priv, Password: []byte(env.CosignPassword), Inputs: in}); err != nil {
		t.Fatal(err)
	}
	r.keyA = filepath.Join(r.keyA, "cosign.pub")
	return r
}

// push writes a small random image to ref (host/repo:tag) and returns it
// by digest.
func push(t *testing.T, ref string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Digest(d.String()).String()
}

// at is image (host/repo@digest) at another host.
func at(host, image string) string {
	_, rest, _ := strings.Cut(image, "/")
	return host + "/" + rest
}

// Each row runs one binary the way a user or a Task does and checks the
// exit code against the table, and the phrase of stderr that says why:
// 1 for a registry that does not answer, 2 for a bad command line or
// reference, 3 only for a check that ran and failed.
func TestExitCodesThroughTheBinaries(t *testing.T) {
	r := newRegistries(t)
	digest := "@sha256:" + strings.Repeat("0", 64)
	verify := func(image, key string, extra ...string) []string {
		return append([]string{"verify", "--pool=worker", "--work=" + t.TempDir(), "--results-dir=" + t.TempDir(),
			"--image=" + image, "--public-key=" + key, "--insecure-registry=" + hostOf(image)}, extra...)
	}
	reproduce := func(image string) []string {
		return []string{"reproduce", image, "--public-key=" + r.keyA, "--insecure-registry=" + hostOf(image), "--results-dir="}
	}
	rollout := func(image string) []string {
		return []string{"rollout", "--pool=worker", "--work=" + t.TempDir(), "--results-dir=" + t.TempDir(), "--source=dir:" + t.TempDir(),
			"--image=" + image, "--public-key=" + r.keyA, "--insecure-registry=" + hostOf(image)}
	}
	cases := []struct {
		name   string
		bin    string
		args   []string
		phrase string
		want   int
	}{
		{"verify, stopped registry", steps, verify(at(r.stopped, r.unsigned), r.keyA), "registry unreachable", exitcode.ExitFailure},
		{"verify, registry answering 500", steps, verify(at(r.failing, r.unsigned), r.keyA), "registry unreachable", exitcode.ExitFailure},
		{"verify, registry answering 401", steps, verify(at(r.denying, r.unsigned), r.keyA), "registry authentication failed", exitcode.ExitFailure},
		{"verify, the issue's unreachable 127.0.0.1:1", steps, verify("127.0.0.1:1/test/os"+digest, r.keyA), "registry unreachable", exitcode.ExitFailure},
		{"verify, unsigned image", steps, verify(r.unsigned, r.keyA), "no sigstore signature", exitcode.ExitRefused},
		{"verify, wrong key", steps, verify(r.signed, r.keyB), "does not verify with this key", exitcode.ExitRefused},
		{"verify, signed image", steps, verify(r.signed, r.keyA), "", exitcode.ExitOK},
		{"verify, image not in the registry", steps, verify(r.good+"/test/os"+digest, r.keyA), "reading the image", exitcode.ExitFailure},
		{"verify, malformed reference", steps, verify("a//b"+digest, r.keyA), `--image "a//b@sha256:`, exitcode.ExitUsage},
		{"verify, empty path component", steps, verify(r.good+"//os"+digest, r.keyA), "want repository@sha256:<64 hex>", exitcode.ExitUsage},
		{"verify, tag instead of digest", steps, verify(r.good+"/test/os:unsigned", r.keyA), "a tag could move", exitcode.ExitUsage},
		{"verify, missing public key", steps, verify(r.unsigned, filepath.Join(t.TempDir(), "none.pub")), "--public-key", exitcode.ExitUsage},
		{"verify, --insecure-registry with a scheme", steps, verify(r.signed, r.keyA, "--insecure-registry=http://"+hostOf(r.signed)),
			"want a registry host[:port], without scheme or path", exitcode.ExitUsage},
		{"verify, unknown flag", steps, verify(r.unsigned, r.keyA, "--bogus"), "unknown flag: --bogus", exitcode.ExitUsage},
		{"reproduce, no kiln attestation", steps, reproduce(r.unsigned), "carries no kiln signature and attestation", exitcode.ExitRefused},
		{"reproduce, stopped registry", steps, reproduce(at(r.stopped, r.unsigned)), "registry unreachable", exitcode.ExitFailure},
		{"reproduce, image not in the registry", steps, reproduce(r.good + "/test/os" + digest), "image not found", exitcode.ExitFailure},
		{"reproduce, tag", steps, reproduce(r.good + "/test/os:unsigned"), "a tag could move", exitcode.ExitUsage},
		{"rollout, unsigned image", steps, rollout(r.unsigned), "refusing to roll out", exitcode.ExitRefused},
		{"rollout, missing public key", steps, append(rollout(r.unsigned), "--public-key="+filepath.Join(t.TempDir(), "none.pub")), "--public-key", exitcode.ExitUsage},
		{"rollout, stopped registry", steps, rollout(at(r.stopped, r.unsigned)), "registry unreachable", exitcode.ExitFailure},
		{"image-build, malformed base", steps, []string{"image-build", "--pool=worker", "--work=" + t.TempDir(), "--base=quay.io//os:4",
			"--repository=quay.io/org/os"}, `--base "quay.io//os:4": want an image reference`, exitcode.ExitUsage},
		{"kmod-build, malformed os image", steps, []string{"kmod-build", "--pool=worker", "--work=" + t.TempDir(), "--os-image=quay.io/os/:4"},
			`--os-image "quay.io/os/:4"`, exitcode.ExitUsage},
		{"completion tcsh", steps, []string{"completion", "tcsh"}, `unknown shell "tcsh"`, exitcode.ExitUsage},
		{"help rendr", steps, []string{"help", "rendr"}, "Did you mean this?\n\trender\n", exitcode.ExitUsage},
		{"unknown command rendr", steps, []string{"rendr"}, "Did you mean this?\n\trender\n", exitcode.ExitUsage},
		{"help render", steps, []string{"help", "render"}, "", exitcode.ExitOK},
		{"trigger, completion tcsh", trigger, []string{"completion", "tcsh"}, `unknown shell "tcsh"`, exitcode.ExitUsage},
		{"trigger, help topic", trigger, []string{"help", "nope"}, `unknown help topic "nope"`, exitcode.ExitUsage},
		{"trigger, malformed --registry", trigger, []string{"--source=dir:" + t.TempDir(), "--output-dir=" + t.TempDir(), "--once", "--registry=host/path"},
			`--registry "host/path": want a registry host[:port]`, exitcode.ExitUsage},
		{"trigger, unknown flag", trigger, []string{"--bogus"}, "unknown flag: --bogus", exitcode.ExitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := run(t, c.bin, c.args, c.phrase)
			if d := cmp.Diff(outcome{c.want, c.phrase}, got); d != "" {
				t.Errorf("%s %s (-want +got):\n%s", filepath.Base(c.bin), strings.Join(c.args, " "), d)
			}
		})
	}
}

// hostOf is the registry host of an image reference.
func hostOf(image string) string {
	host, _, _ := strings.Cut(image, "/")
	return host
}
