package trust

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
)

func nodeInputs(t *testing.T, mutate func(*NodeImage)) Inputs {
	t.Helper()
	n := NodeImage{Pool: "worker", BaseImage: "quay.io/os@sha256:" + strings.Repeat("a", 64), RenderedName: "rendered-worker-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), KmodDigests: []string{"sha256:" + strings.Repeat("c", 64)},
		Source: "https://github.com/kiln-dev/kiln", Builder: "fast"}
	if mutate != nil {
		mutate(&n)
	}
	in, err := n.Inputs()
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestFingerprintChangesWithEveryInput(t *testing.T) {
	base := nodeInputs(t, nil)
	seen := map[string]string{base.Fingerprint(): "base"}
	for name, m := range map[string]func(*NodeImage){
		"pool":    func(n *NodeImage) { n.Pool = "infra" },
		"base":    func(n *NodeImage) { n.BaseImage = "quay.io/os@sha256:" + strings.Repeat("d", 64) },
		"repo":    func(n *NodeImage) { n.BaseImage = "quay.io/other@sha256:" + strings.Repeat("a", 64) },
		"name":    func(n *NodeImage) { n.RenderedName = "rendered-worker-2" },
		"hash":    func(n *NodeImage) { n.RenderedHash = "sha256:" + strings.Repeat("e", 64) },
		"kmods":   func(n *NodeImage) { n.KmodDigests = nil },
		"source":  func(n *NodeImage) { n.Source = "https://example.com" },
		"builder": func(n *NodeImage) { n.Builder = "buildah" },
		"context": func(n *NodeImage) { n.BuildContext = "sha256:" + strings.Repeat("f", 64) },
	} {
		fp := nodeInputs(t, m).Fingerprint()
		if prev, ok := seen[fp]; ok {
			t.Errorf("changing %s gives the fingerprint of %s", name, prev)
		}
		seen[fp] = name
	}
	// Order of kmod digests is not an input.
	two := func(a, b string) func(*NodeImage) {
		return func(n *NodeImage) {
			n.KmodDigests = []string{"sha256:" + strings.Repeat(a, 64), "sha256:" + strings.Repeat(b, 64)}
		}
	}
	if nodeInputs(t, two("1", "2")).Fingerprint() != nodeInputs(t, two("2", "1")).Fingerprint() {
		t.Error("kmod digest order changed the fingerprint")
	}
}

func TestInputsRefuseIncompleteDescriptions(t *testing.T) {
	for name, m := range map[string]func(*NodeImage){
		"base by tag":    func(n *NodeImage) { n.BaseImage = "quay.io/os:4.18" },
		"no pool":        func(n *NodeImage) { n.Pool = "" },
		"unknown build":  func(n *NodeImage) { n.Builder = "docker" },
		"no render hash": func(n *NodeImage) { n.RenderedHash = "" },
	} {
		n := NodeImage{Pool: "worker", BaseImage: "quay.io/os@sha256:" + strings.Repeat("a", 64), RenderedName: "r",
			RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "s", Builder: "fast"}
		m(&n)
		if _, err := n.Inputs(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := (KmodSign{Module: "ns/m", Target: "t", CertHash: "sha256:1", Hash: "sha256",
		Unsigned: "r@sha256:" + strings.Repeat("a", 64)}).Inputs(); err == nil {
		t.Error("kmod sign inputs with no files to sign accepted")
	}
}

func statementOf(t *testing.T, subject name.Digest, in Inputs) intoto.Statement {
	t.Helper()
	b, err := Statement(subject, in, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	var st intoto.Statement
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBindsAcceptsOnlyTheSameInputsAndSubject(t *testing.T) {
	img, _ := name.NewDigest("quay.io/kiln/os@sha256:" + strings.Repeat("9", 64))
	other, _ := name.NewDigest("quay.io/kiln/os@sha256:" + strings.Repeat("8", 64))
	in := nodeInputs(t, nil)
	st := statementOf(t, img, in)
	if err := Binds(st, img, in); err != nil {
		t.Fatalf("own statement: %v", err)
	}
	got, err := InputsOf(st)
	if err != nil || got.Fingerprint() != in.Fingerprint() {
		t.Fatalf("round trip: %v, fingerprint %s want %s", err, got.Fingerprint(), in.Fingerprint())
	}
	for name, tc := range map[string]struct {
		subject name.Digest
		want    Inputs
		msg     string
	}{
		"other digest":     {other, in, "another digest"},
		"other base":       {img, nodeInputs(t, func(n *NodeImage) { n.BaseImage = "quay.io/os@sha256:" + strings.Repeat("d", 64) }), "parameter baseImage"},
		"other build type": {img, Inputs{BuildType: BuildTypeKmodSign, Parameters: in.Parameters}, "buildType"},
		"extra kmod":       {img, nodeInputs(t, func(n *NodeImage) { n.KmodDigests = append(n.KmodDigests, "sha256:"+strings.Repeat("e", 64)) }), "kmodDigests"},
	} {
		err := Binds(st, tc.subject, tc.want)
		if !errors.Is(err, ErrNotProven) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want ErrNotProven naming %q", name, err, tc.msg)
		}
	}
}
