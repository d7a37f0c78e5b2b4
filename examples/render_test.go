package examples

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/kiln-dev/kiln/cmd/cli"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/modsign"

	ign "github.com/coreos/ignition/v2/config/v3_5"
	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"github.com/vincent-petithory/dataurl"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/imagebuild"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// renderPool runs `kiln-steps render --pool pool --source dir:examples/cluster`
// in-process and returns the rendered config, its Ignition and the results.
func renderPool(t *testing.T, pool string) (*mcfgv1.MachineConfig, igntypes.Config, map[string]string) {
	t.Helper()
	work := t.TempDir()
	results := filepath.Join(work, "results")
	var out, errb bytes.Buffer
	args := []string{workspace.StageRender, "--pool=" + pool, "--source=dir:" + clusterDir, "--work=" + work, "--results-dir=" + results}
	if code := cli.Execute(context.Background(), cli.NewSteps(), args, &out, &errb); code != exitcode.ExitOK {
		t.Fatalf("render %s: exit %d\n%s%s", pool, code, out.String(), errb.String())
	}
	b, err := os.ReadFile(filepath.Join(work, "render", "rendered.json"))
	if err != nil {
		t.Fatal(err)
	}
	mc := &mcfgv1.MachineConfig{}
	if err := json.Unmarshal(b, mc); err != nil {
		t.Fatal(err)
	}
	cfg, rpt, err := ign.Parse(mc.Spec.Config.Raw)
	if err != nil {
		t.Fatalf("rendered %s: %v %s", pool, err, rpt.String())
	}
	res := map[string]string{}
	entries, _ := os.ReadDir(results)
	for _, e := range entries {
		v, _ := os.ReadFile(filepath.Join(results, e.Name()))
		res[e.Name()] = string(v)
	}
	return mc, cfg, res
}

func fileContent(t *testing.T, cfg igntypes.Config, path string) (string, bool) {
	t.Helper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			if f.Contents.Source == nil {
				return "", true
			}
			d, err := dataurl.DecodeString(*f.Contents.Source)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			return string(d.Data), true
		}
	}
	return "", false
}

func unitNames(cfg igntypes.Config) []string {
	var names []string
	for _, u := range cfg.Systemd.Units {
		names = append(names, u.Name)
	}
	return names
}

// TestRenderEveryPool renders the three pools with the render stage on the
// folder and checks what each MachineConfig was written for: infra gets
// the realtime kernel, the usbguard extension and everything of worker
// (the spec-2 MC converted, kernel arguments in order); worker and master
// stay on the fast path of image-build; only infra has a ModuleDay0.
func TestRenderEveryPool(t *testing.T) {
	base, _ := Images()
	baseRef, _ := base[0].Ref()
	type want struct {
		kernelType string
		extensions []string
		kargs      []string
		files      []string // present
		absent     []string
		units      []string
		sshKeys    int
		hasKmod    string
		buildah    bool // image-build must take the buildah path
	}
	workerKargs := []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=4", "systemd.unified_cgroup_hierarchy=1"}
	cases := map[string]want{
		"infra": {kernelType: "realtime", extensions: []string{"usbguard"},
			kargs:   append(slices.Clone(workerKargs), "nohz_full=2-7", "isolcpus=managed_irq,2-7"),
			files:   []string{"/etc/chrony.conf", "/etc/sysctl.d/90-legacy-net.conf", "/etc/usbguard/rules.conf", "/etc/kubernetes/kubelet.conf", "/etc/crio/crio.conf.d/00-default"},
			units:   []string{"kubelet.service", "legacy-netconf.service", "usbguard.service"},
			sshKeys: 2, hasKmod: "true", buildah: true},
		"worker": {kernelType: "default", kargs: workerKargs,
			files:   []string{"/etc/chrony.conf", "/etc/sysctl.d/90-legacy-net.conf", "/etc/kubernetes/kubelet.conf"},
			absent:  []string{"/etc/usbguard/rules.conf"},
			units:   []string{"kubelet.service", "legacy-netconf.service"},
			sshKeys: 2, hasKmod: "false"},
		"master": {kernelType: "default",
			files:   []string{"/etc/chrony.conf", "/etc/kubernetes/kubelet.conf"},
			absent:  []string{"/etc/sysctl.d/90-legacy-net.conf", "/etc/usbguard/rules.conf"},
			units:   []string{"kubelet.service"},
			sshKeys: 1, hasKmod: "false"},
	}
	for pool, w := range cases {
		t.Run(pool, func(t *testing.T) {
			mc, cfg, res := renderPool(t, pool)
			if !strings.HasPrefix(mc.Name, "rendered-"+pool+"-") || res["RENDERED_NAME"] != mc.Name {
				t.Errorf("name %q, result %q", mc.Name, res["RENDERED_NAME"])
			}
			kt := mc.Spec.KernelType
			if kt == "" {
				kt = "default"
			}
			if kt != w.kernelType {
				t.Errorf("kernelType %q, want %q", kt, w.kernelType)
			}
			if !slices.Equal(mc.Spec.Extensions, w.extensions) {
				t.Errorf("extensions %v, want %v", mc.Spec.Extensions, w.extensions)
			}
			if !slices.Equal(mc.Spec.KernelArguments, w.kargs) {
				t.Errorf("kernelArguments %v, want %v", mc.Spec.KernelArguments, w.kargs)
			}
			for _, f := range w.files {
				if _, ok := fileContent(t, cfg, f); !ok {
					t.Errorf("file %s missing", f)
				}
			}
			for _, f := range w.absent {
				if _, ok := fileContent(t, cfg, f); ok {
					t.Errorf("file %s present", f)
				}
			}
			for _, u := range w.units {
				if !slices.Contains(unitNames(cfg), u) {
					t.Errorf("unit %s missing from %v", u, unitNames(cfg))
				}
			}
			if chrony, _ := fileContent(t, cfg, "/etc/chrony.conf"); !strings.Contains(chrony, "server clock1.example.com iburst") {
				t.Errorf("chrony.conf %q", chrony)
			}
			if n := len(cfg.Passwd.Users); n != 1 || cfg.Passwd.Users[0].Name != "core" || len(cfg.Passwd.Users[0].SSHAuthorizedKeys) != w.sshKeys {
				t.Errorf("users %+v, want core with %d keys", cfg.Passwd.Users, w.sshKeys)
			}
			if res["BASE_IMAGE"] != baseRef || mc.Spec.OSImageURL != baseRef {
				t.Errorf("BASE_IMAGE %q osImageURL %q, want %q", res["BASE_IMAGE"], mc.Spec.OSImageURL, baseRef)
			}
			if res["HAS_KMOD"] != w.hasKmod || res["KMOD_BUILD"] != w.hasKmod || res["KMOD_SIGN"] != w.hasKmod {
				t.Errorf("kmod results %v, want %s", res, w.hasKmod)
			}
			plan, err := imagebuild.PlanLayer(mc)
			if err != nil {
				t.Fatal(err)
			}
			if (len(plan.NeedsBuildah) > 0) != w.buildah {
				t.Errorf("needs buildah %v, want %v", plan.NeedsBuildah, w.buildah)
			}
		})
	}
}

// TestSpec2ConfigConverted: the Ignition 2.2 MC's file keeps its content
// and mode through ign-converter and the merge, and its unit is enabled.
func TestSpec2ConfigConverted(t *testing.T) {
	_, cfg, _ := renderPool(t, "worker")
	got, ok := fileContent(t, cfg, "/etc/sysctl.d/90-legacy-net.conf")
	if !ok || got != "net.core.somaxconn = 4096\nnet.ipv4.tcp_keepalive_time = 600\n" {
		t.Fatalf("converted file %q (present %v)", got, ok)
	}
	for _, f := range cfg.Storage.Files {
		if f.Path == "/etc/sysctl.d/90-legacy-net.conf" && (f.Mode == nil || *f.Mode != 0o644) {
			t.Errorf("mode %v, want 0644", f.Mode)
		}
	}
	for _, u := range cfg.Systemd.Units {
		if u.Name == "legacy-netconf.service" && (u.Enabled == nil || !*u.Enabled) {
			t.Error("legacy-netconf.service not enabled")
		}
	}
}

// TestModuleDay0SelectsOnlyInfra: the ModuleDay0 matches the infra pool's
// node selector and no other; its Dockerfile gets the payload's OS and
// driver toolkit; its signing Secrets are named, not shipped.
func TestModuleDay0SelectsOnlyInfra(t *testing.T) {
	objs, err := mcrender.LoadDir(clusterDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, pool := range []string{"infra", "worker", "master"} {
		p, err := objs.Pool(pool)
		if err != nil {
			t.Fatal(err)
		}
		md, err := objs.Module(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := md != nil; got != (pool == "infra") {
			t.Errorf("pool %s: ModuleDay0 %v", pool, md)
		}
	}
	md := objs.Modules[0]
	var dockerfile string
	for _, cm := range objs.ConfigMaps {
		if cm.Namespace == md.Namespace && cm.Name == md.Spec.OSMapping.Build.DockerfileConfigMap.Name {
			dockerfile = cm.Data["dockerfile"]
		}
	}
	if dockerfile == "" {
		t.Fatalf("ConfigMap %s/%s key dockerfile missing", md.Namespace, md.Spec.OSMapping.Build.DockerfileConfigMap.Name)
	}
	facts, err := objs.Payload()
	if err != nil {
		t.Fatal(err)
	}
	args, err := kmod.BuildArgs(md, dockerfile, kmod.Payload{OSImage: facts.BaseOSImage, DTKImage: DriverToolkitImage}, KernelVersion)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{kmodbuild.ArgOSAuto: facts.BaseOSImage, kmodbuild.ArgDTKAuto: DriverToolkitImage, kmodbuild.ArgKernelFullVersion: KernelVersion, kmodbuild.ArgModName: "kiln-hello"} {
		if args[k] != v {
			t.Errorf("build arg %s = %q, want %q", k, args[k], v)
		}
	}
	// The image the Dockerfile's COPY makes, as far as signing sees it.
	built := fstest.MapFS{"opt/lib/modules/" + KernelVersion + "/kiln-hello.ko": {Data: []byte("\x7fELF"), Mode: 0o644},
		"usr/lib/modules/" + KernelVersion + "/modules.builtin": {Mode: 0o644}}
	files, err := modsign.ExpandFilesToSign(built, md.Spec.OSMapping.Sign.FilesToSign, KernelVersion)
	if err != nil || len(files) != 1 || files[0] != "/opt/lib/modules/"+KernelVersion+"/kiln-hello.ko" {
		t.Errorf("filesToSign %v (%v)", files, err)
	}
	if !strings.Contains(dockerfile, "COPY --from=builder /usr/src/kiln-hello/${MOD_NAME}.ko /opt/lib/modules/${KERNEL_FULL_VERSION}/") {
		t.Error("the Dockerfile does not put the module where filesToSign looks")
	}
}

// TestNoPrivateKeysInFolder: the signing Secrets are only named; no key
// material is checked in.
func TestNoPrivateKeysInFolder(t *testing.T) {
	err := filepath.WalkDir(clusterDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, bad := range []string{"PRIVATE KEY", "BEGIN CERTIFICATE", "kiln-hello-signing-key\n  namespace"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
