package nodesim

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/registry"
)

func ptr[T any](v T) *T { return &v }

func ignFile(path, content string, mode, uid int) igntypes.File {
	return igntypes.File{Node: igntypes.Node{Path: path, User: igntypes.NodeUser{ID: ptr(uid)}},
		FileEmbedded1: igntypes.FileEmbedded1{Mode: ptr(mode),
			Contents: igntypes.Resource{Source: ptr(dataurl.EncodeBytes([]byte(content)))}}}
}

// renderedConfig is a rendered MachineConfig with what a pool's config
// typically holds: /etc files (one the node changed at first boot), a file
// under /usr/local (which is /var/usrlocal on CoreOS), a unit with a
// drop-in, a masked unit and a symlink.
func renderedConfig(t testing.TB) *mcfgv1.MachineConfig {
	t.Helper()
	cfg := igntypes.Config{
		Ignition: igntypes.Ignition{Version: "3.5.0"},
		Storage: igntypes.Storage{
			Files: []igntypes.File{
				ignFile("/etc/motd", "rendered motd\n", 0o644, 0),
				ignFile("/etc/kubernetes/kubelet.conf", "kind: KubeletConfiguration\n", 0o600, 0),
				ignFile("/etc/chrony.d/pool.conf", "pool 2.rhel.pool.ntp.org iburst\n", 0o644, 0),
				ignFile("/usr/local/bin/tool", "#!/bin/sh\necho tool\n", 0o755, 1000),
			},
			Links: []igntypes.Link{{Node: igntypes.Node{Path: "/etc/localtime"},
				LinkEmbedded1: igntypes.LinkEmbedded1{Target: ptr("../usr/share/zoneinfo/UTC")}}},
		},
		Systemd: igntypes.Systemd{Units: []igntypes.Unit{
			{Name: "kubelet.service", Enabled: ptr(true), Contents: ptr("[Service]\nExecStart=/usr/bin/kubelet\n[Install]\nWantedBy=multi-user.target\n"),
				Dropins: []igntypes.Dropin{{Name: "10-env.conf", Contents: ptr("[Service]\nEnvironment=A=1\n")}}},
			{Name: "bad.service", Mask: ptr(true)},
		}},
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}, KernelType: "default"}}
	mc.APIVersion, mc.Kind, mc.Name = mcfgv1.GroupVersion.String(), "MachineConfig", "rendered-worker-nodesim"
	return mc
}

// buildWithKiln pushes base to an in-process registry and builds mc on it
// with kiln's fast path, returning the pushed image.
func buildWithKiln(t testing.TB, base v1.Image, mc *mcfgv1.MachineConfig) v1.Image {
	t.Helper()
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	baseRef, err := name.ParseReference(host+"/openshift/rhcos:nodesim", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(baseRef, base); err != nil {
		t.Fatal(err)
	}
	res, err := imagebuild.Build(context.Background(), registry.Remote{Insecure: []string{host}},
		imagebuild.BuildInput{Base: baseRef.String(), Repository: host + "/kiln/os", Pool: "worker", Rendered: mc})
	if err != nil {
		t.Fatalf("kiln fast path: %v", err)
	}
	ref, err := name.ParseReference(res.Ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// describe renders a node file for comparison: type, mode, owner, content.
func describe(f File, ok bool) string {
	switch {
	case !ok:
		return "absent"
	case f.Type == tar.TypeSymlink:
		return "-> " + f.Link
	default:
		return fmt.Sprintf("%c %v %d:%d %q", f.Type, f.Mode, f.UID, f.GID, f.Data)
	}
}

// compareWithRendered describes, for each file of the rendered config,
// what the node has where it differs from the rendered file.
func compareWithRendered(v *View, want map[string]File) map[string]string {
	diffs := map[string]string{}
	paths := make([]string, 0, len(want))
	for p := range want {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		w := want[p]
		w.Type = typeOr(w.Type)
		got, ok := v.File(p)
		if g, wd := describe(got, ok), describe(w, true); g != wd {
			diffs[p] = g
		}
	}
	return diffs
}

func typeOr(t byte) byte {
	if t == 0 {
		return tar.TypeReg
	}
	return t
}

// TestFastPathConfigOnNode builds a config-only change with kiln's fast
// path on the CoreOS-shaped base, deploys the base on a node whose
// Ignition wrote /etc/motd at first boot, upgrades to kiln's image and
// checks file by file what the node sees. From the image alone: every
// rendered /etc file but the one the node had changed (ostree keeps the
// node's copy), nothing under /var (/usr/local/bin/tool: /var is not
// applied on upgrade). Once the machine-config daemon has written the
// MachineConfig's files, as it does on an osImageURL rollout, the node
// has the rendered config exactly.
func TestFastPathConfigOnNode(t *testing.T) {
	base := mustBase(t)
	mc := renderedConfig(t)
	img := buildWithKiln(t, base, mc)
	want, err := ConfigFiles(mc)
	if err != nil {
		t.Fatal(err)
	}

	n := New(t, Options{})
	if _, err := n.Deploy(base); err != nil {
		t.Fatal(err)
	}
	if err := n.EditEtc("/etc/motd", []byte("written by Ignition at first boot\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := n.Upgrade(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kiln's image imported and deployed in %v", v.Took)
	wantBeforeDaemon := map[string]string{
		"/etc/motd":           describe(File{Type: tar.TypeReg, Mode: 0o644, Data: []byte("written by Ignition at first boot\n")}, true),
		"/usr/local/bin/tool": "absent",
	}
	if d := cmp.Diff(wantBeforeDaemon, compareWithRendered(v, want)); d != "" {
		t.Errorf("rendered files the node does not have from kiln's image alone (-want +got):\n%s", d)
	}
	if f, ok := v.File(imagebuild.CurrentConfigPath); !ok || !strings.Contains(string(f.Data), `"rendered-worker-nodesim"`) {
		t.Errorf("%s on the node: %s", imagebuild.CurrentConfigPath, describe(f, ok))
	}
	if len(v.Dropped) != 0 {
		t.Errorf("the import dropped %v of kiln's layer", v.Dropped)
	}

	if err := n.ApplyConfig(mc); err != nil {
		t.Fatal(err)
	}
	if v, err = n.View(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{}, compareWithRendered(v, want)); d != "" {
		t.Errorf("rendered files the node does not have once the daemon wrote them (-want +got):\n%s", d)
	}
}
