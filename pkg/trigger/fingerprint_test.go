package trigger

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/trust"
	"github.com/kiln-dev/kiln/test/env"
)

func mcWithKernelArg(name, arg string) *mcfgv1.MachineConfig {
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), ResourceVersion: arg},
		Spec:       mcfgv1.MachineConfigSpec{KernelArguments: []string{arg}, Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}},
	}
}

func TestFingerprintParts(t *testing.T) {
	var h SpecHasher
	base := Inputs{
		MachineConfigs:  []*mcfgv1.MachineConfig{mcWithKernelArg("00-worker", "a"), mcWithKernelArg("50-x", "b")},
		BaseImage:       "quay.io/os@sha256:1111",
		ExtensionsImage: "quay.io/ext@sha256:2222",
		PipelineVersion: "0.1",
	}
	f0, err := h.Compute(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(f0.Sum) != 32 || len(RunName("worker", "payload", f0.Sum)) != len("kiln-worker-payload-")+10 {
		t.Fatalf("fingerprint %q: want 32 hex digits", f0.Sum)
	}
	reordered := base
	reordered.MachineConfigs = []*mcfgv1.MachineConfig{base.MachineConfigs[1], base.MachineConfigs[0]}
	if f, _ := h.Compute(reordered); f.Sum != f0.Sum {
		t.Fatal("the order MCs are listed in changed the fingerprint")
	}
	md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "kiln"}}
	md.Spec.OSMapping.ContainerImage = "quay.io/kmod:1"
	for _, tc := range []struct {
		name   string
		change func(in *Inputs)
		want   string
	}{
		{"mc spec", func(in *Inputs) {
			in.MachineConfigs = []*mcfgv1.MachineConfig{mcWithKernelArg("00-worker", "z"), base.MachineConfigs[1]}
		}, TriggerMachineConfig},
		{"mc added", func(in *Inputs) { in.MachineConfigs = append(in.MachineConfigs, mcWithKernelArg("60-y", "c")) }, TriggerMachineConfig},
		{"base image", func(in *Inputs) { in.BaseImage = "quay.io/os@sha256:3333" }, TriggerPayload},
		{"extensions image", func(in *Inputs) { in.ExtensionsImage = "quay.io/ext@sha256:4444" }, TriggerPayload},
		{"moduleday0", func(in *Inputs) { in.ModuleDay0 = md }, TriggerModuleDay0},
		{"pipeline version", func(in *Inputs) { in.PipelineVersion = "0.2" }, TriggerManual},
		{"build format", func(in *Inputs) { in.Formats = append(trust.Formats(), "kiln-image/99") }, TriggerManual},
		{"rebuild annotation", func(in *Inputs) { in.Rebuild = "2026-11-23" }, TriggerManual},
		{"payload and mc: payload wins", func(in *Inputs) {
			in.BaseImage = "quay.io/os@sha256:5555"
			in.MachineConfigs = in.MachineConfigs[:1]
		}, TriggerPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base
			in.MachineConfigs = append([]*mcfgv1.MachineConfig(nil), base.MachineConfigs...)
			tc.change(&in)
			f, err := h.Compute(in)
			if err != nil {
				t.Fatal(err)
			}
			if f.Sum == f0.Sum {
				t.Fatal("fingerprint did not change")
			}
			prev := decodeParts(encodeParts(f0.Parts))
			if got := f.Changed(prev); got != tc.want {
				t.Fatalf("trigger = %q, want %q", got, tc.want)
			}
		})
	}
	explicit := base
	explicit.Formats = trust.Formats()
	if f, _ := h.Compute(explicit); f.Sum != f0.Sum {
		t.Error("nil Formats is not trust.Formats()")
	}
	if got := f0.Changed(nil); got != TriggerMachineConfig {
		t.Fatalf("first run's trigger = %q", got)
	}
}

// The spec cache must not serve a stale digest once an MC changes.
func TestSpecHasherCache(t *testing.T) {
	var h SpecHasher
	mc := mcWithKernelArg("a", "1")
	s1, _ := h.sum(mc)
	mc.Spec.KernelArguments = []string{"2"}
	mc.ResourceVersion = "2"
	s2, _ := h.sum(mc)
	if s1 == s2 {
		t.Fatal("changed spec, same digest")
	}
}

func TestParseConfig(t *testing.T) {
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigName, Namespace: "kiln"}, Data: data}
	}
	good := map[string]string{
		"repository":     "registry.example/os-{pool}",
		"params":         "kiln-image: ghcr.io/kiln-dev/kiln-steps:v0.1.0\ncanary: \"1\"\n",
		"workspaces":     "- name: work\n  volumeClaimTemplate:\n    spec:\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n- name: signing-key\n  secret: {secretName: cosign}\n",
		"timeout":        "90m",
		"bootImagePools": "worker, infra",
		"podTemplate":    "env:\n- name: KILN_INSECURE_REGISTRY\n  value: 192.0.2.2:5000\nnodeSelector: {kubernetes.io/os: linux}\n",
		"upgradeAhead":   "z-stream",
	}
	c, err := ParseConfig(cm(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.RepositoryFor("infra") != "registry.example/os-infra" || c.Timeout != 90*time.Minute ||
		!c.UpdatesBootImages("infra") || c.UpdatesBootImages("master") || c.Params["canary"] != "1" ||
		len(c.Workspaces) != 2 || c.Pipeline != "kiln-node-image" || c.ServiceAccountPrefix != "kiln-" ||
		c.PodTemplate == nil || len(c.PodTemplate.Env) != 1 || c.PodTemplate.NodeSelector["kubernetes.io/os"] != "linux" ||
		c.UpgradeAhead != (payload.Selection{ZStream: true}) {
		t.Fatalf("parsed %+v", c)
	}
	for _, tc := range []struct {
		name, key, value, want string
	}{
		{"no repository", "repository", "", "data.repository is empty"},
		{"digest in repository", "repository", "r.example/os@sha256:00", "without tag or digest"},
		{"tag in repository", "repository", "r.example/os-{pool}:v1", `data.repository "r.example/os-{pool}:v1": want a repository without tag or digest`},
		{"empty path component in repository", "repository", "r.example//os", "without tag or digest"},
		{"malformed steps image", "params", "kiln-image: r.example//steps@sha256:" + strings.Repeat("a", 64), `param kiln-image "r.example//steps@sha256:`},
		{"bad timeout", "timeout", "soon", "data.timeout"},
		{"params not a map", "params", "- a\n- b", "data.params"},
		{"reserved param", "params", "pool: master", `param "pool" is set by the trigger`},
		{"reserved ahead param", "params", "target-release: 4.19.0", `param "target-release" is set by the trigger`},
		{"unknown upgrade-ahead selector", "upgradeAhead", "x-stream", `data.upgradeAhead: selector "x-stream": want z-stream, y-stream, desired or none`},
		{"unknown workspace field", "workspaces", "- name: work\n  bogus: 1", "data.workspaces"},
		{"unknown pod template field", "podTemplate", "nodeSelectors: {a: b}", "data.podTemplate"},
		{"repeated workspace", "workspaces", "- name: work\n  emptyDir: {}\n- name: work\n  emptyDir: {}", `data.workspaces[1]: name "work"`},
		{"public key in the signing Secret", "workspaces", "- name: signing-key\n  secret: {secretName: cosign}\n- name: public-key\n  secret: {secretName: cosign}",
			`data.workspaces: public-key binds Secret "cosign", the signing key's`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := map[string]string{}
			for k, v := range good {
				d[k] = v
			}
			d[tc.key] = tc.value
			_, err := ParseConfig(cm(d))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ConfigMap kiln/kiln-config") {
				t.Fatalf("error %v, want it to name ConfigMap kiln/kiln-config and say %q", err, tc.want)
			}
		})
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add("r.example/os", "a: b", "- name: work\n  emptyDir: {}", "1h", "worker")
	f.Add("", "", "", "", "")
	f.Fuzz(func(t *testing.T, repo, params, workspaces, timeout, pools string) {
		c, err := ParseConfig(&corev1.ConfigMap{Data: map[string]string{
			"repository": repo, "params": params, "workspaces": workspaces, "timeout": timeout, "bootImagePools": pools,
		}})
		if err != nil {
			return
		}
		if c.Repository == "" || c.Timeout <= 0 {
			t.Fatalf("accepted config without repository or timeout: %+v", c)
		}
		if _, err := imageref.ParseRepository(c.RepositoryFor("worker")); err != nil {
			t.Fatalf("accepted repository %q that name does not parse: %v", c.Repository, err)
		}
		for k := range c.Params {
			if reserved[k] {
				t.Fatalf("accepted reserved param %q", k)
			}
		}
	})
}

func FuzzDecodeParts(f *testing.F) {
	f.Add("manual=aa,pipeline=bb,payload=cc,moduleday0=dd,machineconfigs=ee")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		parts := decodeParts(s)
		for _, p := range partOrder {
			if strings.Contains(parts[p], ",") {
				t.Fatalf("part %s = %q holds a separator", p, parts[p])
			}
		}
	})
}

// The sample kiln-config parses and makes a run Tekton accepts.
func TestSampleConfig(t *testing.T) {
	var cm *corev1.ConfigMap
	f, err := os.Open(filepath.Join(env.RepoRoot(), "config", "samples", "kiln-config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = manifests.Decode("kiln-config.yaml", f, func(o runtime.Object) error {
		cm, _ = o.(*corev1.ConfigMap)
		return nil
	})
	if err != nil || cm == nil {
		t.Fatalf("decoding the sample: %v (ConfigMap %v)", err, cm)
	}
	c, err := ParseConfig(cm)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := (&SpecHasher{}).Compute(Inputs{BaseImage: "b", PipelineVersion: "0.1"})
	pr := BuildRun(c, RunSpec{Namespace: "kiln", Pool: "worker", Fingerprint: fp, Trigger: TriggerManual, BootImages: "x", Tasks: []string{"render", "rollout"}})
	if err := validateRun(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	if param(pr, "repository") != "quay.io/example/node-image-worker" || len(pr.Spec.Workspaces) != 4 ||
		pr.Spec.TaskRunTemplate.PodTemplate == nil || pr.Spec.TaskRunTemplate.PodTemplate.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Fatalf("run from the sample: %+v", pr.Spec)
	}
}
