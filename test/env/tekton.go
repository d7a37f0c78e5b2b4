package env

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// TektonNamespace is where Tekton's controller reads its configuration.
const TektonNamespace = "tekton-pipelines"

// tektonFlags override Tekton's released feature-flags where this
// single-node cluster differs from a real one:
//   - coschedule "disabled": the default ("workspaces") runs an affinity
//     assistant StatefulSet per PVC workspace, pointless on one node;
//   - no injected sidecars (no service mesh here), so steps start without
//     waiting for the pod's readiness annotation.
var tektonFlags = map[string]string{
	"coschedule": "disabled",
	"running-in-environment-with-injected-sidecars": "false",
}

// StartTekton runs Tekton Pipelines' controller (the version of
// hack/versions.sh, built by `make tools`) as a process against k, with
// its released ConfigMaps, and imports the images it puts in TaskRun pods
// into node. Tekton's admission webhook is not run: the CRDs are served
// without it, and the controller defaults and validates every run itself
// when it reconciles. The controller stops when t ends.
func StartTekton(t testing.TB, k *Kube, node *Node) {
	t.Helper()
	if err := startTekton(t, k, node); err != nil {
		t.Fatalf("starting Tekton: %v", err)
	}
}

func startTekton(t testing.TB, k *Kube, node *Node) error {
	v, err := Versions()
	if err != nil {
		return err
	}
	version := v["TEKTON_VERSION"]
	bin := filepath.Join(CacheDir(), "bin", "tekton-"+version, "controller")
	if _, err := os.Stat(bin); err != nil {
		return &ToolError{Tool: "tekton controller", Where: filepath.Dir(bin)}
	}
	images, err := tektonImages(t, version)
	if err != nil {
		return err
	}
	args := []string{"-kubeconfig=" + k.Kubeconfig(t), "-disable-ha",
		// Required by the flag parser; no Windows node here.
		"-shell-image-win=kiln.local/tekton/none-windows:" + version}
	for flag, img := range images {
		if err := node.importImage(img.Tar); err != nil {
			return err
		}
		args = append(args, "-"+flag+"="+img.Ref)
	}
	if err := tektonConfig(k); err != nil {
		return err
	}
	_, err = retryPortClash(func() (struct{}, error) {
		return struct{}{}, startTektonController(t, bin, args)
	})
	return err
}

// startTektonController starts the controller on fresh free ports, stopped
// when t ends, and waits for its readiness probe.
func startTektonController(t testing.TB, bin string, args []string) error {
	ports := map[string]int{}
	for _, name := range []string{"PROBES_PORT", "METRICS_PROMETHEUS_PORT", "PROFILING_PORT"} {
		port, err := freePort("127.0.0.1")
		if err != nil {
			return err
		}
		ports[name] = port
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SYSTEM_NAMESPACE="+TektonNamespace, "KUBERNETES_MIN_VERSION=v1.28.0",
		"CONFIG_DEFAULTS_NAME=config-defaults", "CONFIG_LOGGING_NAME=config-logging",
		"CONFIG_OBSERVABILITY_NAME=config-observability", "CONFIG_FEATURE_FLAGS_NAME=feature-flags",
		"CONFIG_LEADERELECTION_NAME=config-leader-election-controller", "CONFIG_SPIRE=config-spire",
		"METRICS_DOMAIN=tekton.dev/pipeline")
	for name, port := range ports {
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", name, port))
	}
	p, err := startProcess("tekton-controller", cmd, filepath.Join(t.TempDir(), "controller.log"))
	if err != nil {
		return err
	}
	t.Cleanup(func() {
		if err := p.stop(); err != nil {
			t.Errorf("stopping Tekton's controller: %v", err)
		}
	})
	ready := fmt.Sprintf("http://127.0.0.1:%d/readiness", ports["PROBES_PORT"])
	return waitFor(p, 60*time.Second, func() error { return httpOK(ready) })
}

// tektonConfig creates Tekton's namespace and every ConfigMap of its
// release config (config/*.yaml in the module), with tektonFlags applied.
func tektonConfig(k *Kube) error {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: TektonNamespace}}
	if err := k.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	dir, err := ModuleDir("github.com/tektoncd/pipeline")
	if err != nil {
		return err
	}
	cms, err := releaseConfigMaps(dir, TektonNamespace)
	if err != nil {
		return err
	}
	for _, cm := range cms {
		if cm.Name == "feature-flags" {
			for key, val := range tektonFlags {
				cm.Data[key] = val
			}
		}
		if err := k.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s: %w", cm.Name, err)
		}
	}
	return nil
}

// releaseConfigMaps reads the ConfigMaps of a Tekton project's release
// config (config/config-*.yaml in its module folder dir), placed in ns.
func releaseConfigMaps(dir, ns string) ([]*corev1.ConfigMap, error) {
	files, err := filepath.Glob(filepath.Join(dir, "config", "config-*.yaml"))
	if err != nil {
		return nil, err
	}
	var out []*corev1.ConfigMap
	for _, f := range files {
		cm, err := readConfigMap(f)
		if err != nil {
			return nil, err
		}
		cm.Namespace = ns
		out = append(out, cm)
	}
	return out, nil
}

func readConfigMap(path string) (*corev1.ConfigMap, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{}
	if err := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(b)), 4096).Decode(cm); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	if cm.Kind != "ConfigMap" {
		return nil, fmt.Errorf("decoding %s: kind %q, want ConfigMap", path, cm.Kind)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	return cm, nil
}
