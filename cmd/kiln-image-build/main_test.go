package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/test/env"
)

const (
	self    = "github.com/kiln-dev/kiln/cmd/kiln-image-build"
	osimage = "github.com/kiln-dev/kiln/pkg/osimage"
)

// unwanted are import path prefixes kiln-image-build must not link: the
// other stages, and the libraries whose package inits cost a step's start
// most (measured with GODEBUG=inittrace=1): Kubernetes' client scheme,
// controller-runtime, CRD validation and its metrics registry.
var unwanted = []string{
	"github.com/kiln-dev/kiln/pkg/render",
	"github.com/kiln-dev/kiln/pkg/kmod",
	"github.com/kiln-dev/kiln/pkg/rollout",
	"github.com/kiln-dev/kiln/pkg/bootimage",
	"github.com/kiln-dev/kiln/pkg/reproduce",
	"github.com/kiln-dev/kiln/pkg/report",
	"github.com/kiln-dev/kiln/pkg/signing",
	"github.com/kiln-dev/kiln/pkg/manifests",
	"github.com/kiln-dev/kiln/pkg/kube",
	"github.com/kiln-dev/kiln/pkg/apis",
	"github.com/kiln-dev/kiln/cmd/cli",
	"k8s.io/client-go/kubernetes",
	"k8s.io/apiextensions-apiserver",
	"k8s.io/component-base",
	"sigs.k8s.io/controller-runtime",
	// pkg/sign's signer and the containers/image signature policy it
	// writes and checks: image-build only proves reuse (pkg/sign/proof).
	"github.com/kiln-dev/kiln/pkg/sign",
	"go.podman.io/image/v5/signature",
	"k8s.io/client-go",
}

// TestLinksNoOtherStage lists the binary's packages (go list -deps) and
// fails naming, for each unwanted package it links, the import chain
// that pulls it in; it also fails if pkg/osimage is not linked, so an
// empty listing cannot pass.
func TestLinksNoOtherStage(t *testing.T) {
	imports := listImports(t, "./cmd/kiln-image-build")
	if _, ok := imports[osimage]; !ok {
		t.Fatalf("go list names no %s among %d packages", osimage, len(imports))
	}
	reached := chains(imports, self)
	for _, pkg := range slices.Sorted(maps.Keys(reached)) {
		if isUnwanted(pkg) {
			t.Errorf("links %s: %s", pkg, strings.Join(reached[pkg], " -> "))
		}
	}
}

// isUnwanted reports whether pkg is under one of the unwanted prefixes;
// cmd/cli/base and cmd/cli/imagebuildcmd are the two cmd/cli packages
// the binary is made of, and pkg/sign/proof the part of pkg/sign it uses.
func isUnwanted(pkg string) bool {
	for _, own := range []string{"github.com/kiln-dev/kiln/cmd/cli/base", "github.com/kiln-dev/kiln/cmd/cli/imagebuildcmd", "github.com/kiln-dev/kiln/pkg/sign/proof"} {
		if pkg == own || strings.HasPrefix(pkg, own+"/") {
			return false
		}
	}
	for _, u := range unwanted {
		if pkg == u || strings.HasPrefix(pkg, u+"/") {
			return true
		}
	}
	return false
}

// listImports runs go list -deps -json on pkg and returns each linked
// package's imports.
func listImports(t *testing.T, pkg string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags="+env.BuildTags, "-deps", "-json=ImportPath,Imports", pkg)
	cmd.Dir = env.RepoRoot()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pkg, err, stderr.Bytes())
	}
	imports := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return imports
		} else if err != nil {
			t.Fatalf("go list %s: decoding its output: %v", pkg, err)
		}
		imports[p.ImportPath] = p.Imports
	}
}

// chains walks imports breadth first from root and returns, for every
// package reached, a shortest import chain from root to it.
func chains(imports map[string][]string, root string) map[string][]string {
	out := map[string][]string{root: {root}}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, d := range imports[p] {
			if _, seen := out[d]; seen {
				continue
			}
			out[d] = append(append([]string(nil), out[p]...), d)
			queue = append(queue, d)
		}
	}
	return out
}
