package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// nextRelease is the release the sample cluster is offered in these tests.
const nextRelease = "4.20.4"

// TestAheadImageIsTheUpgradesImage: the node image an upgrade-ahead run
// builds (render with the target's --os-image, --extensions-image and
// --release-version on the cluster as it runs today, then image-build) has
// exactly the inputs, and so the fingerprint tag and digest, of the image
// the pool's normal run builds once the cluster has moved to that release
// (MCO's ConfigMap machine-config-osimageurl and ClusterVersion
// status.desired name it), which is what lets that run prove and reuse the
// ahead image. A payload whose releaseVersion still names the old release
// renders a different config, and the inputs differ: the comparison can
// fail.
func TestAheadImageIsTheUpgradesImage(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	for _, kv := range e.Buildah.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	ctx := t.Context()
	images, err := Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := Push(ctx, e.Registry.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	next, err := PushNextBase(ctx, e.Registry.Host, "io.kiln.test.release", nextRelease)
	if err != nil {
		t.Fatal(err)
	}
	ext := refs[1]
	// worker and master take the fast path, infra the buildah path
	// (its Containerfile, build context and extensions image are inputs).
	for _, pool := range []string{"worker", "master", "infra"} {
		ahead := buildFor(t, e.Registry.Host, clusterDir, pool,
			"--os-image="+next, "--extensions-image="+ext, "--release-version="+nextRelease)
		for _, tc := range []struct {
			name    string
			version string
			same    bool
		}{
			{name: "payload moved to the target", version: nextRelease, same: true},
			{name: "payload moved, releaseVersion left behind", version: ReleaseVersion, same: false},
		} {
			t.Run(pool+"/"+tc.name, func(t *testing.T) {
				moved := movedCluster(t, next, ext, tc.version)
				got := buildFor(t, e.Registry.Host, moved, pool)
				diff := cmp.Diff(ahead.report.Inputs, got.report.Inputs)
				if tc.same {
					if diff != "" {
						t.Errorf("the normal run's node image inputs differ from the upgrade-ahead run's (-ahead +normal):\n%s", diff)
					}
					if d := cmp.Diff(ahead.rendered, got.rendered); d != "" {
						t.Errorf("rendered config differs (-ahead +normal):\n%s", d)
					}
					if got.report.Tag != ahead.report.Tag || got.report.Ref != ahead.report.Ref {
						t.Errorf("normal run's image %s at tag %s, want the ahead run's %s at %s", got.report.Ref, got.report.Tag, ahead.report.Ref, ahead.report.Tag)
					}
					return
				}
				if diff == "" || got.report.Tag == ahead.report.Tag {
					t.Errorf("inputs equal with releaseVersion %s: the comparison cannot tell renders apart", tc.version)
				}
			})
		}
	}
}

// builtFor is one render + image-build: the rendered config and image-build's
// report.
type builtFor struct {
	rendered *mcfgv1.MachineConfig
	report   *workspace.BuildReport
}

// buildFor runs render (with extra flags) on the folder dir and image-build
// on its BASE_IMAGE into the registry at host, as the node-image Pipeline
// does (image-build gets no extensions image: the rendered config's).
func buildFor(t *testing.T, host, dir, pool string, extra ...string) builtFor {
	t.Helper()
	work := t.TempDir()
	results := filepath.Join(work, "results")
	var out, errb bytes.Buffer
	args := append([]string{workspace.StageRender, "--pool=" + pool, "--source=dir:" + dir, "--work=" + work, "--results-dir=" + results}, extra...)
	if code := cli.Execute(context.Background(), cli.NewSteps(), args, &out, &errb); code != exitcode.ExitOK {
		t.Fatalf("render %s: exit %d\n%s%s", pool, code, out.String(), errb.String())
	}
	base, err := os.ReadFile(filepath.Join(results, "BASE_IMAGE"))
	if err != nil {
		t.Fatal(err)
	}
	o := &osimage.BuildOptions{Options: step.Options{Work: work, ResultsDir: filepath.Join(work, "out"), Pool: pool},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{host}},
		Base:            string(base), PayloadBase: string(base),
		Repository: host + "/kiln/" + pool, Source: imagebuild.DefaultSource, BuildahBin: "buildah"}
	var log bytes.Buffer
	if err := o.Run(t.Context(), step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("image-build %s: %v\n%s", pool, err, log.String())
	}
	ws := workspace.Workspace{Root: work}
	rep, err := ws.ReadBuildReport()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ws.RenderedPath())
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{}
	if err := json.Unmarshal(b, mc); err != nil {
		t.Fatal(err)
	}
	return builtFor{rendered: mc, report: rep}
}

// movedCluster copies examples/cluster as the cluster looks once it moved
// to a release: MCO's machine-config-osimageurl names its OS and extensions
// images and its version (version), ClusterVersion status.desired names
// nextRelease.
func movedCluster(t *testing.T, osImage, ext, version string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(clusterDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := string(b)
		switch filepath.Base(p) {
		case "machine-config-osimageurl.yaml":
			s = replaceLine(t, s, "baseOSContainerImage: ", osImage)
			s = replaceLine(t, s, "baseOSExtensionsContainerImage: ", ext)
			s = replaceLine(t, s, "releaseVersion: ", version)
		case "clusterversion.yaml":
			s = strings.Replace(s, "    version: "+ReleaseVersion, "    version: "+nextRelease, 1)
		}
		rel, _ := filepath.Rel(clusterDir, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// replaceLine sets the value of the first line of s holding key.
func replaceLine(t *testing.T, s, key, value string) string {
	t.Helper()
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if k := strings.Index(l, key); k >= 0 {
			lines[i] = l[:k] + key + value
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no line with %q in\n%s", key, s)
	return ""
}
