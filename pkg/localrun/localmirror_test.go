package localrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
)

// TestRunLocalThroughMirrorWithSourceDown is a disconnected cluster in
// local mode, for real: the sample's payload (base, extensions, release,
// and the driver-toolkit the release names by tag) lives on a source
// registry S and, with the same digests, on a mirror registry M; the
// sample folder gets an ImageDigestMirrorSet and an ImageTagMirrorSet
// S → M and an image config marking both plain HTTP; kiln pushes its node
// images to a third registry O. All three pools run, infra included, so
// the base, the extensions, the kmod build's DTK and OS_AUTO base and the
// release image are all pulled on the way. A full run of the three pools
// takes about 45 s on a 2-core machine, a run that reuses what O holds
// about 7 s.
//
//  1. S stopped (connections refused): every pool completes.
//  2. The mirror sets edited (NeverContactSource) and another added: not
//     an input, the next run says nothing changed.
//  3. state.json removed, S running, NeverContactSource: every pool
//     completes again and S receives no request at all. Images already in
//     O are reused by provenance (that is what makes this run shorter),
//     but every run still reads its base through the mirrors.
//
// The source is a counting front of a real registry: it records every
// request line (test/env's registry keeps no access log) and can stop
// and start again at the one address the sample names.
func TestRunLocalThroughMirrorWithSourceDown(t *testing.T) {
	ctx := context.Background()
	steps := env.BuildBinary(t, "./cmd/kiln-steps")
	source := startCountingFront(t, env.StartRegistry(t, env.RegistryOptions{}).Host)
	mirror := env.StartRegistry(t, env.RegistryOptions{})
	own := env.StartRegistry(t, env.RegistryOptions{})
	b := env.NewBuildah(t, env.BuildahOptions{})
	for _, kv := range b.Env {
		// Registries (mirrors, plain HTTP) are the registries folder's
		// to say, not the test's.
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "CONTAINERS_") && k != "CONTAINERS_REGISTRIES_CONF" {
			t.Setenv(k, v)
		}
	}

	images, err := examples.Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := examples.Push(ctx, source.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	dtk, _ := env.PushDTK(t, source.Host+"/openshift/driver-toolkit:"+examples.ReleaseVersion)
	for _, ref := range append(refs, dtk, source.Host+"/openshift/driver-toolkit:"+examples.ReleaseVersion) {
		if err := crane.Copy(ref, mirror.Host+strings.TrimPrefix(ref, source.Host), crane.Insecure); err != nil {
			t.Fatalf("copying %s to the mirror: %v", ref, err)
		}
	}

	// The sample's payload names S. The release image names the sample's
	// registry (127.0.0.1:5555) inside, for the driver-toolkit by tag: it
	// is a second source, mirrored to M too and never started. The
	// ModuleDay0's containerImage is on M's host, in a repository nothing
	// mirrors, as a disconnected site often keeps its own images on its
	// mirror registry: the sample's base has uncompressed layers (made
	// bit for bit), and buildah gzips a layer it cannot mount from the
	// registry it pulled the base from, which image-build's preflight
	// then refuses as a base not built FROM the payload's. RHCOS layers
	// are compressed already.
	src := sampleWith(t, strings.NewReplacer(examples.Registry+"/kiln/", mirror.Host+"/kiln/", examples.Registry, source.Host))
	mirrors := func(policy string, extra string) {
		t.Helper()
		b := []byte(mirrorSets(source.Host, mirror.Host, policy) + extra)
		if err := os.WriteFile(filepath.Join(src, "registries.yaml"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	o := trigger.Options{Source: "dir:" + src, Once: true, Output: out,
		Local: trigger.LocalOptions{Registry: own.Host, StepBinary: steps, Root: env.RepoRoot(), BootImagePools: []string{"worker"}}}
	run := func(what string) string {
		t.Helper()
		var log bytes.Buffer
		start := time.Now()
		err := runLocal(ctx, o, &log)
		t.Logf("%s: %s", what, time.Since(start).Round(time.Second))
		if err != nil {
			t.Fatalf("%s: %v\n%s%s", what, err, log.String(), failedStepLogs(err))
		}
		return log.String()
	}
	allComplete := func(what, text string) {
		t.Helper()
		rows := summaryRows(text)
		for _, pool := range []string{"worker", "master", "infra"} {
			if r := rows[pool]; r == nil || r[3] != "Completed" || !strings.HasPrefix(r[5], "sha256:") || r[6] != "true" {
				t.Fatalf("%s: pool %s's summary row %v\n%s", what, pool, r, text)
			}
		}
	}

	source.stop(t)
	mirrors("", "")
	allComplete("source stopped", run("source stopped"))

	source.start(t)
	mirrors("NeverContactSource", otherMirrorSet)
	text := run("mirror sets edited")
	if !strings.Contains(text, "nothing to do") || strings.Contains(text, "PipelineRun") {
		t.Fatalf("a mirror set edit started runs:\n%s", text)
	}

	if err := os.Remove(filepath.Join(out, stateFile)); err != nil {
		t.Fatal(err)
	}
	allComplete("NeverContactSource", run("NeverContactSource"))
	if reqs := source.requests(); len(reqs) != 0 {
		t.Errorf("with NeverContactSource the source received %d requests: %q", len(reqs), reqs)
	}
}

// mirrorSets are the sample's mirror sets: by digest and by tag, S and
// the sample's own registry both mirrored to M, with the given
// mirrorSourcePolicy ("" is AllowContactingSource); and the image
// config that marks S, M and the sample's registry plain HTTP (kiln adds
// its own registry O itself).
func mirrorSets(source, mirror, policy string) string {
	p := ""
	if policy != "" {
		p = "\n    mirrorSourcePolicy: " + policy
	}
	entries := ""
	for _, s := range []string{source, examples.Registry} {
		entries += "\n  - source: " + s + "\n    mirrors:\n    - " + mirror + p
	}
	return `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: sample-digest-mirror
spec:
  imageDigestMirrors:` + entries + `
---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata:
  name: sample-tag-mirror
spec:
  imageTagMirrors:` + entries + `
---
apiVersion: config.openshift.io/v1
kind: Image
metadata:
  name: cluster
spec:
  registrySources:
    insecureRegistries:
    - ` + source + `
    - ` + mirror + `
    - ` + examples.Registry + `
`
}

// otherMirrorSet is a mirror set the sample's images do not use.
const otherMirrorSet = `---
apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSet
metadata:
  name: unrelated
spec:
  imageDigestMirrors:
  - source: quay.io/openshift-release-dev/ocp-v4.0-art-dev
    mirrors:
    - mirror.example.com/ocp
`

// countingFront serves a registry at its own address, records every
// request line, and can stop (connections refused) and start again at
// the same address.
type countingFront struct {
	Host  string
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	reqs  []string
	srv   *http.Server
}

func startCountingFront(t *testing.T, backend string) *countingFront {
	t.Helper()
	// The Host header is kept, so the registry's upload locations name the
	// front.
	f := &countingFront{proxy: httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: backend})}
	f.Host = "127.0.0.1:0"
	f.start(t)
	t.Cleanup(func() { f.stop(t) })
	return f
}

func (f *countingFront) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", f.Host)
	if err != nil {
		t.Fatalf("starting the source registry's front: %v", err)
	}
	f.Host = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reqs = append(f.reqs, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		f.proxy.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(l) }()
	f.srv = srv
	f.mu.Lock()
	f.reqs = nil
	f.mu.Unlock()
}

func (f *countingFront) stop(t *testing.T) {
	t.Helper()
	if f.srv == nil {
		return
	}
	if err := f.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("stopping the source registry's front: %v", err)
	}
	f.srv = nil
}

// requests returns the request lines received since the last start.
func (f *countingFront) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reqs...)
}

// failedStepLogs returns the step logs a run error names: what the failed
// step said is the first thing to read when this test fails.
func failedStepLogs(err error) string {
	var b strings.Builder
	for _, m := range regexp.MustCompile(`log (\S+\.log)`).FindAllStringSubmatch(err.Error(), -1) {
		text, _ := os.ReadFile(m[1])
		fmt.Fprintf(&b, "\n--- %s:\n%s", m[1], text)
	}
	return b.String()
}
