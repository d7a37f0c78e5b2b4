package catlint

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/catalog"
)

const repoRoot = "../../.."

func options(t *testing.T) Options {
	t.Helper()
	cats, err := HubCategories()
	if err != nil {
		t.Fatal(err)
	}
	v, err := ShellVar(filepath.Join(repoRoot, "hack", "versions.sh"), "TEKTON_VERSION")
	if err != nil {
		t.Fatal(err)
	}
	return Options{MinVersion: strings.TrimPrefix(v, "v"), Categories: cats}
}

func loadCatalog(t *testing.T, dir string) []*Resource {
	t.Helper()
	rs, errs := LoadCatalog(context.Background(), dir)
	if len(errs) > 0 {
		t.Fatalf("loading %s: %v", dir, errors.Join(errs...))
	}
	return rs
}

// TestCatalogPassesCatlinChecks: every Task and Pipeline under catalog/
// passes every check, minVersion included (the Tekton release the e2e
// runs, hack/versions.sh).
func TestCatalogPassesCatlinChecks(t *testing.T) {
	dir := filepath.Join(repoRoot, "catalog")
	rs := loadCatalog(t, dir)
	o := options(t)
	var tasks, pipelines int
	for _, r := range rs {
		for _, err := range Check(context.Background(), dir, r, o) {
			t.Error(err)
		}
		if r.Task != nil {
			tasks++
		} else {
			pipelines++
		}
	}
	if tasks == 0 || pipelines == 0 {
		t.Errorf("catalog/ has %d Tasks and %d Pipelines; want both", tasks, pipelines)
	}
}

// TestHubCategoriesAreTheGenerators: the generator (pkg/catalog) refuses
// the same categories the checks refuse.
func TestHubCategoriesAreTheGenerators(t *testing.T) {
	cats, err := HubCategories()
	if err != nil {
		t.Fatal(err)
	}
	if len(cats) < 10 || !slices.Equal(cats, catalog.Categories) {
		t.Errorf("hub-categories.yaml %q, pkg/catalog.Categories %q; keep them equal", cats, catalog.Categories)
	}
}

// TestChecksRejectBadResources runs the checks on testdata resources, each
// breaking rules on purpose, and on one that follows them all with a
// script shellcheck accepts.
func TestChecksRejectBadResources(t *testing.T) {
	dir := filepath.Join("testdata", "catalog")
	o := options(t)
	want := map[string][]string{
		"script-ok": nil,
		"script-bad": {
			`spec.steps[say]: script: shellcheck -s sh -`, "SC2045", "SC2086",
		},
		"misplaced": {"resource path is task/misplaced/0.2/misplaced.yaml, TEP-0003 wants task/misplaced/0.1/misplaced.yaml"},
		"bad-meta": {
			`metadata.annotations["tekton.dev/pipelines.minVersion"] "0.56.0": the tests prove Tekton ` + o.MinVersion + " only",
			`metadata.annotations["tekton.dev/categories"] "Compilers": not a Tekton Hub category`,
			`metadata.annotations["tekton.dev/platforms"] "linux/arm/v7/extra": ` + catalog.PlatformRule,
			`metadata.annotations["tekton.dev/displayName"] is missing`,
			`metadata.annotations["tekton.dev/tags"] is missing`,
			"spec.params[image]: description is missing",
			"spec.results[OUT]: description is missing",
			"spec.workspaces[work]: description is missing",
			"spec.displayName is missing",
			`spec.params[tool]: description refers to "../internal/notes.md"`,
			`spec.steps[unresolved]: image "$(params.image)": names a variable that no param default resolves`,
			`spec.steps[latest]: image "$(params.tool)": not pinned by digest`,
			`spec.steps[short]: image "busybox@sha256:`,
			"spec.steps[secret-env]: env TOKEN comes from a Secret",
			"README.md beside the resource is missing",
			"samples/ beside the resource has no YAML",
		},
	}
	rs := loadCatalog(t, dir)
	if len(rs) != len(want) {
		t.Fatalf("testdata has %d resources, want %d", len(rs), len(want))
	}
	for _, r := range rs {
		t.Run(r.Meta().Name, func(t *testing.T) {
			var got []string
			for _, err := range Check(context.Background(), dir, r, o) {
				got = append(got, err.Error())
			}
			all := strings.Join(got, "\n")
			for _, w := range want[r.Meta().Name] {
				if !strings.Contains(all, w) {
					t.Errorf("no problem says %q; got:\n%s", w, all)
				}
			}
			if want[r.Meta().Name] == nil && len(got) > 0 {
				t.Errorf("problems on a resource that follows every rule:\n%s", all)
			}
		})
	}
}

// TestCheckImage: what a step image may be once defaults are applied.
func TestCheckImage(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, c := range []struct{ ref, want string }{
		{"ghcr.io/kiln-dev/kiln-steps:v0.1.0@" + d, ""},
		{"registry.local:5000/a/b:v1@" + d, ""},
		{"ghcr.io/kiln-dev/kiln-steps:v0.1.0", "not pinned by digest"},
		{"ghcr.io/kiln-dev/kiln-steps@" + d, "no tag"},
		{"ghcr.io/kiln-dev/kiln-steps:latest@" + d, "tag latest"},
		{"ubuntu:22.04@" + d, "not a fully specified reference"},
		{"library/ubuntu:22.04@" + d, "not a fully specified reference"},
		{"$(params.x)", "names a variable"},
		{"ghcr.io/a/b:v1@sha256:abc", "not a fully specified reference"},
	} {
		got := CheckImage(c.ref)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("CheckImage(%q) = %q, want %q", c.ref, got, c.want)
		}
	}
	defaults := map[string]string{"img": "ghcr.io/a/b:v1@" + d}
	for in, want := range map[string]string{
		"$(params.img)":      "ghcr.io/a/b:v1@" + d,
		`$(params["img"])`:   "ghcr.io/a/b:v1@" + d,
		"$(params.other)":    "$(params.other)",
		"x/$(params.img)/$y": "x/ghcr.io/a/b:v1@" + d + "/$y",
	} {
		if got := SubstituteParams(in, defaults); got != want {
			t.Errorf("SubstituteParams(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLintScript: shellcheck and the shell's syntax check both run; a
// script in a language nothing here lints is refused.
func TestLintScript(t *testing.T) {
	for _, c := range []struct{ script, want string }{
		{"echo \"$HOME\"\n", ""},
		{"#!/bin/bash\nset -euo pipefail\nx=(a b)\necho \"${x[@]}\"\n", ""},
		{"echo $HOME\n", "SC2086"},
		{"#!/bin/sh\nx=(a b)\n", "SC3030"},
		{"#!/usr/bin/env bash\nif true; then\n", "SC1073"},
		{"#!/usr/bin/env python3\nprint(1)\n", "only shell scripts"},
	} {
		err := LintScript(c.script)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("LintScript(%q) = %v, want %q", c.script, err, c.want)
		}
	}
}

// TestStepsImagePinned: every Task and Pipeline, in catalog/ and in tasks/
// and pipelines/, defaults the steps image to one release image pinned by
// digest (make release), tagged with the resources' version.
func TestStepsImagePinned(t *testing.T) {
	rs := loadCatalog(t, filepath.Join(repoRoot, "catalog"))
	for _, d := range []string{"tasks", "pipelines"} {
		files, _ := filepath.Glob(filepath.Join(repoRoot, d, "*.yaml"))
		for _, f := range files {
			if filepath.Base(f) == "kustomization.yaml" {
				continue
			}
			r, err := DecodeResource(context.Background(), f, d+"/"+filepath.Base(f))
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
	}
	for _, err := range CheckPinned(rs) {
		t.Error(err)
	}
}

// TestCheckPinnedRejects: each way a default can be wrong.
func TestCheckPinnedRejects(t *testing.T) {
	const d = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	rs := loadCatalog(t, filepath.Join("testdata", "catalog"))
	var r *Resource
	for _, x := range rs {
		if x.Meta().Name == "script-ok" {
			r = x
		}
	}
	set := func(ref string) *Resource {
		cp := &Resource{Rel: r.Rel, Task: r.Task.DeepCopy()}
		cp.Task.Spec.Params[0].Default.StringVal = ref
		return cp
	}
	for _, c := range []struct {
		rs   []*Resource
		want string
	}{
		{[]*Resource{set(StepsRepository + ":v0.1.0")}, "is not " + StepsRepository},
		{[]*Resource{set(StepsRepository + ":v0.2.0" + d)}, `tag v0.2.* but app.kubernetes.io/version is "0.1"`},
		{[]*Resource{set("ghcr.io/other/steps:v0.1.0" + d)}, "is not " + StepsRepository},
		{[]*Resource{set(StepsRepository + ":v0.1.0" + d), set(StepsRepository + ":v0.1.1" + d)}, "differs from"},
		{[]*Resource{func() *Resource {
			r := set(StepsRepository + ":v0.1.0" + d)
			r.Task.Annotations[catalog.AnnotationPlatforms] = "linux/amd64,linux/s390x"
			return r
		}()}, "lists linux/s390x, but the release image is built for linux/amd64 only"},
	} {
		errs := CheckPinned(c.rs)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("CheckPinned: %v, want one error with %q", errs, c.want)
		}
	}
	if errs := CheckPinned([]*Resource{set(StepsRepository + ":v0.1.3" + d)}); len(errs) > 0 {
		t.Errorf("a pinned default: %v", errs)
	}
}

// A description may cite public URLs but not documents a catalog user lacks.
// The note number is put together here so that no file of the repository
// holds one whole.
func TestInternalRefInDescriptions(t *testing.T) {
	note := "seed" + " 003"
	for d, want := range map[string]string{
		"see ../internal/notes.md for why":                 "../internal/notes.md",
		"(../../internal/x)":                               "../../internal/x",
		"as section §3 says":                               "§3",
		"the day-0 rules (" + note + ")":                   note,
		"the image, by digest":                             "",
		"https://github.com/openshift/enhancements/a/b.md": "",
		"a seeded value, 0.3 of it":                        "",
	} {
		if got := internalRef.FindString(d); got != want {
			t.Errorf("internalRef in %q = %q, want %q", d, got, want)
		}
	}
}

// TestMetadataPlatformVariant: the linter accepts the platforms the
// generator accepts (pkg/catalog.CheckPlatform), linux/arm64/v8 included,
// and refuses the same malformed ones with the same rule.
func TestMetadataPlatformVariant(t *testing.T) {
	var r *Resource
	for _, x := range loadCatalog(t, filepath.Join("testdata", "catalog")) {
		if x.Meta().Name == "script-ok" {
			r = x
		}
	}
	o := options(t)
	for _, tc := range []struct {
		platforms string
		want      []string
	}{
		{"linux/amd64,linux/arm64/v8", nil},
		{"linux/arm64/v8/x", []string{`metadata.annotations["tekton.dev/platforms"] "linux/arm64/v8/x": ` + catalog.PlatformRule}},
	} {
		cp := &Resource{Rel: r.Rel, Task: r.Task.DeepCopy()}
		cp.Task.Annotations[catalog.AnnotationPlatforms] = tc.platforms
		if _, err := catalog.ParseMetadata(cp.Task.Labels, cp.Task.Annotations); (err == nil) != (tc.want == nil) {
			t.Errorf("%s: the generator says %v, the linter wants %q", tc.platforms, err, tc.want)
		}
		if diff := cmp.Diff(tc.want, checkMetadata(cp, o)); diff != "" {
			t.Errorf("%s: checkMetadata (-want +got):\n%s", tc.platforms, diff)
		}
	}
}
