package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/tektoncd/pipeline/pkg/resolution/resolver/bundle"

	"github.com/kiln-dev/kiln/pkg/catalog"
	"github.com/kiln-dev/kiln/test/env"
)

// TestGenerateAndBundles runs the two commands as make does: generate
// writes what the committed catalog holds, and bundles pushes the named
// resource where Tekton's resolver finds it.
func TestGenerateAndBundles(t *testing.T) {
	ctx := context.Background()
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	out := t.TempDir()
	if err := run(ctx, []string{"generate", "-root", "../..", "-out", out}); err != nil {
		t.Fatal(err)
	}
	rs, err := catalog.Load(ctx, "../..")
	if err != nil {
		t.Fatal(err)
	}
	files, err := catalog.Files(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{out, filepath.Join("../..", "catalog")} {
		if d, err := catalog.Diff(dir, files); err != nil || len(d) > 0 {
			t.Errorf("%s differs from a fresh generation (run make catalog): %v %v", dir, d, err)
		}
	}

	reg := env.StartRegistry(t, env.RegistryOptions{})
	if err := run(ctx, []string{"bundles", "-root", "../..", "-registry", reg.Host + "/kiln", "task/kiln-render"}); err != nil {
		t.Fatal(err)
	}
	res, err := bundle.GetEntry(ctx, authn.DefaultKeychain, bundle.RequestOptions{Bundle: reg.Host + "/kiln/kiln-task-render:0.1", EntryName: "kiln-render", Kind: "task"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Data()), "name: kiln-render") {
		t.Errorf("resolved data is not the kiln-render Task")
	}
	// Only the named resource was pushed.
	if _, err := bundle.GetEntry(ctx, authn.DefaultKeychain, bundle.RequestOptions{Bundle: reg.Host + "/kiln/kiln-task-report:0.1", EntryName: "kiln-report", Kind: "task"}); err == nil {
		t.Errorf("kiln-report was pushed too")
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bundles", "-root", "../..", "-registry", reg.Host + "/kiln", "kiln-nope"}, `selecting "kiln-nope": no Task or Pipeline of that name`},
		{[]string{"bundles", "-root", "../.."}, "no registry given"},
		{[]string{"publish"}, `unknown command "publish"`},
		{nil, "usage: catalog generate|bundles"},
		{[]string{"generate", "-root", t.TempDir()}, "tasks: no *.yaml files"},
	} {
		if err := run(ctx, c.args); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("run %v: %v, want %q", c.args, err, c.want)
		}
	}
}
