package examples_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/osimage"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/nodesim"
)

// userContainerfile is a MachineOSConfig-style containerFile: an agent
// under /usr, its config in /etc, a tool under /opt and state under /var.
const userContainerfile = `RUN mkdir -p /usr/lib/kiln-agent /opt/kiln-agent /var/lib/kiln-agent && \
    echo 'agent 1.0' > /usr/lib/kiln-agent/version && \
    echo 'agent=on' > /etc/kiln-agent.conf && \
    echo 'agent=on' > /etc/kiln-agent-local.conf && \
    echo tool > /opt/kiln-agent/tool && \
    echo state > /var/lib/kiln-agent/state
`

// TestInfraBuildahPathWithUserContentOnNode builds the sample's infra
// pool on image-build's buildah path with a user Containerfile and the
// sample's extensions (usbguard, kernel-rt), upgrades a simulated node
// (real ostree) that first installed the sample's base and had one /etc
// file written locally, and checks file by file: the node sees the
// Containerfile's /usr content and /etc files, the extension's binary and
// enabled unit, and boots kernel-rt; it does not see the Containerfile's
// /opt file (the import drops top-level opt), its /var file (an upgrade
// never applies an image's /var) nor its copy of the /etc file the node
// had written (ostree's three-way merge keeps the node's). Once the
// machine-config daemon has written the rendered MachineConfig's files,
// the node has every one of them as rendered.
func TestInfraBuildahPathWithUserContentOnNode(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	images, err := examples.Images()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := examples.Push(t.Context(), e.Registry.Host, images)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	examples.RenderInto(t, work, "infra")
	img := buildInfraWithContainerfile(t, e, refs, work)
	mc, err := imagebuild.ReadRendered(workspace.Workspace{Root: work}.RenderedPath())
	if err != nil {
		t.Fatal(err)
	}

	base, err := examples.BaseImage()
	if err != nil {
		t.Fatal(err)
	}
	n := nodesim.New(t, nodesim.Options{})
	if _, err := n.Deploy(base); err != nil {
		t.Fatal(err)
	}
	local := []byte("agent=off # set on this node\n")
	if err := n.EditEtc("/etc/kiln-agent-local.conf", local, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := n.Upgrade(img)
	if err != nil {
		t.Fatalf("upgrading the node to the infra image: %v", err)
	}
	if v.Kernel != examples.RTKernelVersion {
		t.Errorf("the node boots kernel %q, want kernel-rt's %q", v.Kernel, examples.RTKernelVersion)
	}
	want := map[string]string{
		"/usr/lib/kiln-agent/version":                             "agent 1.0\n",
		"/etc/kiln-agent.conf":                                    "agent=on\n",
		"/usr/bin/usbguard":                                       "#!/bin/sh\necho 'usbguard (kiln sample stand-in)'\n",
		"/etc/systemd/system/basic.target.wants/usbguard.service": "-> /usr/lib/systemd/system/usbguard.service",
		// Not seen, and why:
		"/etc/kiln-agent-local.conf":                              "agent=off # set on this node\n", // the node's local copy wins the /etc merge
		"/opt/kiln-agent/tool":                                    "absent",                         // top-level opt is dropped by the import
		"/var/lib/kiln-agent/state":                               "absent",                         // /var is applied on first install only
		"/usr/lib/modules/" + examples.KernelVersion + "/vmlinuz": "absent",                         // kernel-rt replaced the default kernel
	}
	got := map[string]string{}
	for p := range want {
		got[p] = content(v.File(p))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("what the node sees after the upgrade (-want +got):\n%s", d)
	}
	if v.Dropped["opt"] == 0 {
		t.Errorf("the import dropped %v, want the Containerfile's opt entries", v.Dropped)
	}
	// kiln's import model, given the same node, names the same losses
	// of the Containerfile's content, each with its reason.
	wantLost := map[string]string{
		"/etc/kiln-agent-local.conf": nodeimport.LostLocalEtc,
		"/opt/kiln-agent":            nodeimport.LostOmitted,
		"/opt/kiln-agent/tool":       nodeimport.LostOmitted,
		"/var/lib/kiln-agent":        nodeimport.LostVarUpgrade,
		"/var/lib/kiln-agent/state":  nodeimport.LostVarUpgrade,
	}
	if d := cmp.Diff(wantLost, modelLosses(t, base, img, local, "kiln-agent")); d != "" {
		t.Errorf("pkg/nodeimport's losses of the Containerfile's content (-want +got):\n%s", d)
	}

	if err := n.ApplyConfig(mc); err != nil {
		t.Fatal(err)
	}
	if v, err = n.View(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{}, differsFromRendered(t, v, mc)); d != "" {
		t.Errorf("rendered files the node does not have once the daemon wrote them (-want +got):\n%s", d)
	}
}

// buildInfraWithContainerfile runs image-build for infra with the user
// Containerfile and the sample's extensions image.
func buildInfraWithContainerfile(t *testing.T, e *env.Env, refs []string, work string) v1.Image {
	t.Helper()
	for _, kv := range e.Buildah.Env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	cf := filepath.Join(t.TempDir(), "Containerfile")
	if err := os.WriteFile(cf, []byte(userContainerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	results := filepath.Join(work, "image-results")
	o := &osimage.BuildOptions{Options: step.Options{Work: work, ResultsDir: results, Pool: "infra"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
		Base:            refs[0], PayloadBase: refs[0], ExtensionsImage: refs[1], ContainerfilePath: cf,
		Repository: e.Registry.Host + "/kiln/infra", Source: imagebuild.DefaultSource, BuildahBin: "buildah"}
	var log bytes.Buffer
	if err := o.Run(t.Context(), step.Streams{Out: &log, Err: &log}); err != nil {
		t.Fatalf("image-build infra: %v\n%s", err, log.String())
	}
	t.Logf("image-build infra:\n%s", log.String())
	url, _ := os.ReadFile(filepath.Join(results, "IMAGE_URL"))
	digest, _ := os.ReadFile(filepath.Join(results, "IMAGE_DIGEST"))
	return examples.Pull(t, string(url)+"@"+string(digest))
}

// content is a node file for comparison: its bytes, a symlink's target,
// or "absent".
func content(f nodesim.File, ok bool) string {
	switch {
	case !ok:
		return "absent"
	case f.Type == tar.TypeSymlink:
		return "-> " + f.Link
	default:
		return string(f.Data)
	}
}

// differsFromRendered describes each file of mc that the node has
// otherwise than the machine-config daemon writes it.
func differsFromRendered(t *testing.T, v *nodesim.View, mc *mcfgv1.MachineConfig) map[string]string {
	t.Helper()
	files, err := nodesim.ConfigFiles(mc)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	diffs := map[string]string{}
	for _, p := range paths {
		w := files[p]
		got, ok := v.File(p)
		if g, wd := describeFile(got, ok), describeFile(w, true); g != wd {
			diffs[p] = fmt.Sprintf("%s, rendered %s", g, wd)
		}
	}
	return diffs
}

func describeFile(f nodesim.File, ok bool) string {
	switch {
	case !ok:
		return "absent"
	case f.Type == tar.TypeSymlink:
		return "-> " + f.Link
	default:
		return fmt.Sprintf("%v %d:%d %q", f.Mode, f.UID, f.GID, f.Data)
	}
}

// modelLosses runs pkg/nodeimport on the upgrade from base to img of a
// node that wrote /etc/kiln-agent-local.conf itself, and returns the lost
// image paths whose name contains marker, with their reasons.
func modelLosses(t *testing.T, base, img v1.Image, local []byte, marker string) map[string]string {
	t.Helper()
	baseTree, _, err := nodeimport.Import(base, nodeimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tree, _, err := nodeimport.Import(img, nodeimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	etc := baseTree.Defaults()
	sum := sha256.Sum256(local)
	etc["/etc/kiln-agent-local.conf"] = nodeimport.Entry{Type: nodeimport.Regular, Mode: 0o644,
		Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(local)), Source: "/etc/kiln-agent-local.conf"}
	vars := map[string]nodeimport.Entry{}
	for p, e := range baseTree.Entries {
		if p == "/var" || strings.HasPrefix(p, "/var/") {
			vars[p] = e
		}
	}
	view := nodeimport.NodeView(tree, nodeimport.Node{Upgrade: true, Defaults: baseTree.Defaults(), Etc: etc, Var: vars})
	lost := map[string]string{}
	for _, l := range view.Lost {
		if strings.Contains(l.Path, marker) {
			lost[l.Path] = l.Reason
		}
	}
	return lost
}
