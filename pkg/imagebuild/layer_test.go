package imagebuild

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/kiln-dev/kiln/test/golden"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// listTar renders a tar stream as one line per entry: type, mode, owner,
// mtime, name, and the content or link target.
func listTar(t *testing.T, b []byte) string {
	t.Helper()
	var out strings.Builder
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out.String()
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		extra := fmt.Sprintf("%q", data)
		if h.Linkname != "" {
			extra = "-> " + h.Linkname
		}
		if strings.HasSuffix(h.Name, "currentconfig") {
			extra = fmt.Sprintf("(%d bytes of JSON)", len(data))
		}
		fmt.Fprintf(&out, "%c %04o %d:%d %s %s %s\n", h.Typeflag, h.Mode, h.Uid, h.Gid, h.ModTime.UTC().Format("2006-01-02"), h.Name, extra)
	}
}

func TestPlanLayerGolden(t *testing.T) {
	plan, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-0123", imagetest.SampleConfig(t, "hello\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.NeedsBuildah) != 0 {
		t.Fatalf("NeedsBuildah: %v", plan.NeedsBuildah)
	}
	b, err := plan.Tar()
	if err != nil {
		t.Fatal(err)
	}
	got := listTar(t, b)
	golden.Check(t, filepath.Join("testdata", "sample.layer.golden"), []byte(got))
	// Same inputs, same bytes.
	again, _ := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-0123", imagetest.SampleConfig(t, "hello\n")))
	b2, _ := again.Tar()
	if !bytes.Equal(b, b2) {
		t.Error("two plans of the same config gave different tar bytes")
	}
}

func TestPlanLayerCurrentConfigIgnoresServerFields(t *testing.T) {
	a := imagetest.RenderedMC(t, "rendered-worker-1", imagetest.SampleConfig(t, "x"))
	b := imagetest.RenderedMC(t, "rendered-worker-1", imagetest.SampleConfig(t, "x"))
	b.ResourceVersion, b.UID, b.Generation = "42", "abc", 3
	pa, _ := PlanLayer(a)
	pb, _ := PlanLayer(b)
	if RenderedHash(pa) != RenderedHash(pb) {
		t.Error("resourceVersion/uid changed the rendered hash")
	}
	c := imagetest.RenderedMC(t, "rendered-worker-1", imagetest.SampleConfig(t, "y"))
	pc, _ := PlanLayer(c)
	if RenderedHash(pa) == RenderedHash(pc) {
		t.Error("a file change did not change the rendered hash")
	}
}

func TestPlanLayerNeedsBuildah(t *testing.T) {
	tests := []struct {
		name string
		edit func(*igntypes.Config)
		spec func(mcExt *[]string, kt *string)
		want string
	}{
		{name: "extensions", spec: func(e *[]string, _ *string) { *e = []string{"usbguard"} }, want: "spec.extensions"},
		{name: "kernelType", spec: func(_ *[]string, kt *string) { *kt = "realtime" }, want: `spec.kernelType "realtime"`},
		{name: "enable base unit", edit: func(c *igntypes.Config) {
			c.Systemd.Units = append(c.Systemd.Units, igntypes.Unit{Name: "chronyd.service", Enabled: imagetest.Ptr(true)})
		}, want: "chronyd.service"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := imagetest.SampleConfig(t, "x")
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			mc := imagetest.RenderedMC(t, "rendered-worker-1", cfg)
			if tc.spec != nil {
				tc.spec(&mc.Spec.Extensions, &mc.Spec.KernelType)
			}
			plan, err := PlanLayer(mc)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(plan.NeedsBuildah, ";"), tc.want) {
				t.Errorf("NeedsBuildah %v does not mention %q", plan.NeedsBuildah, tc.want)
			}
		})
	}
}

func TestPlanLayerErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  igntypes.Config
		want string
	}{
		{name: "remote source", cfg: igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{{
			Node: igntypes.Node{Path: "/etc/x"}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: imagetest.Ptr("https://example.com/x")}}}}}},
			want: `storage.files /etc/x: contents.source: scheme "https"`},
		{name: "user by name", cfg: igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{{
			Node: igntypes.Node{Path: "/etc/y", User: igntypes.NodeUser{Name: imagetest.Ptr("core")}}}}}},
			want: "storage.files /etc/y: user/group given by name"},
		{name: "append", cfg: igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{{
			Node: igntypes.Node{Path: "/etc/z"}, FileEmbedded1: igntypes.FileEmbedded1{Append: []igntypes.Resource{{Source: imagetest.Ptr("data:,a")}}}}}}},
			want: "storage.files /etc/z: append is not supported"},
		{name: "template without instance", cfg: igntypes.Config{Systemd: igntypes.Systemd{Units: []igntypes.Unit{{
			Name: "a@.service", Enabled: imagetest.Ptr(true), Contents: imagetest.Ptr("[Install]\nWantedBy=multi-user.target\n")}}}},
			want: "systemd.units a@.service: template unit"},
		{name: "alias escaping the unit folder", cfg: igntypes.Config{Systemd: igntypes.Systemd{Units: []igntypes.Unit{{
			Name: "b.service", Enabled: imagetest.Ptr(true), Contents: imagetest.Ptr("[Install]\nAlias=../../passwd\n")}}}},
			want: `systemd.units b.service: [Install] names "../../passwd"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-e", tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "rendered-worker-e") {
				t.Fatalf("error %v: want it to name the MachineConfig and say %q", err, tc.want)
			}
		})
	}
	if _, err := PlanLayer(nil); err == nil {
		t.Error("nil MachineConfig: no error")
	}
	bad := imagetest.RenderedMC(t, "rendered-worker-bad", igntypes.Config{})
	bad.Spec.Config.Raw = []byte(`{"ignition":{"version":"9.9.9"}}`)
	if _, err := PlanLayer(bad); err == nil || !strings.Contains(err.Error(), "rendered-worker-bad") {
		t.Errorf("bad Ignition version: %v", err)
	}
}

// FuzzPlanLayer feeds arbitrary spec.config bytes through the planner: it
// must never panic, and whatever it accepts must tar.
func FuzzPlanLayer(f *testing.F) {
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:,hi"},"mode":420}]}}`))
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"systemd":{"units":[{"name":"a.service","enabled":true,"contents":"[Install]\nWantedBy=x.target\n"}]}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		mc := imagetest.RenderedMC(t, "rendered-fuzz", igntypes.Config{})
		mc.Spec.Config.Raw = raw
		plan, err := PlanLayer(mc)
		if err != nil {
			return
		}
		if _, err := plan.Tar(); err != nil {
			t.Fatalf("accepted config does not tar: %v", err)
		}
	})
}

// FuzzEnableLinks feeds arbitrary unit files to the [Install] parser: no
// panic, and every link it returns lives under /etc/systemd/system.
func FuzzEnableLinks(f *testing.F) {
	f.Add("a.service", imagetest.KubeletUnit)
	f.Add("t@.service", "[Install]\nWantedBy=x.target\nDefaultInstance=1\n")
	f.Add("b.service", "[Install]\nAlias=../../etc/passwd\n")
	f.Fuzz(func(t *testing.T, name, contents string) {
		links, err := enableLinks(name, contents)
		if err != nil {
			return
		}
		for _, l := range links {
			if !strings.HasPrefix(l, systemdDir+"/") {
				t.Fatalf("link %q escapes %s", l, systemdDir)
			}
		}
	})
}
