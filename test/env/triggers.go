package env

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Triggers is a running Tekton Triggers controller.
type Triggers struct {
	// SinkImage is the eventlistenersink image EventListener pods run.
	SinkImage string
	proc      *process
}

// Log returns the controller's log so far, for failure messages.
func (tr *Triggers) Log() string {
	b, _ := os.ReadFile(tr.proc.log)
	return string(b)
}

// StartTriggers installs Tekton Triggers (hack/versions.sh's
// TRIGGERS_VERSION, built by `make tools`) on k as its release does, less
// what this cluster cannot run: its CRDs, its ClusterRoles (the roles an
// EventListener's ServiceAccount binds to) and its ConfigMaps in
// tekton-pipelines; then runs its controller as a process, which makes
// each EventListener a Deployment whose pod runs the eventlistenersink
// image, imported into node. Not installed: the admission webhook (samples
// are complete without its defaults) and the core interceptors, whose
// self-made certificate names a Service this node cannot route to; a test
// serves its ClusterInterceptors. The controller stops when t ends.
func StartTriggers(t testing.TB, k *Kube, node *Node) *Triggers {
	t.Helper()
	tr, err := startTriggers(t, k, node)
	if err != nil {
		t.Fatalf("starting Tekton Triggers: %v", err)
	}
	return tr
}

func startTriggers(t testing.TB, k *Kube, node *Node) (*Triggers, error) {
	v, err := Versions()
	if err != nil {
		return nil, err
	}
	version := v["TRIGGERS_VERSION"]
	bins := filepath.Join(CacheDir(), "bin", "triggers-"+version)
	for _, c := range []string{"controller", "eventlistenersink"} {
		if _, err := os.Stat(filepath.Join(bins, c)); err != nil {
			return nil, &ToolError{Tool: "tekton triggers " + c, Where: bins}
		}
	}
	dir, err := hackModuleDir("triggers", "github.com/tektoncd/triggers", version)
	if err != nil {
		return nil, err
	}
	if err := installTriggers(k, filepath.Join(dir, "config")); err != nil {
		return nil, err
	}
	img, err := koImage(filepath.Join(bins, "eventlistenersink"))
	if err != nil {
		return nil, err
	}
	sink := "kiln.local/tekton-triggers/eventlistenersink:" + version
	tar, err := writeImage(t.TempDir(), sink, img)
	if err != nil {
		return nil, err
	}
	if err := node.importImage(tar); err != nil {
		return nil, err
	}
	p, err := startKnativeController(t, "tekton-triggers", func() (*exec.Cmd, error) {
		return triggersCommand(t, k, filepath.Join(bins, "controller"), sink)
	})
	if err != nil {
		return nil, err
	}
	return &Triggers{SinkImage: sink, proc: p}, nil
}

// triggersCommand is the controller with its release Deployment's flags
// and environment, the sink image local and the ports free.
func triggersCommand(t testing.TB, k *Kube, bin, sink string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, "-kubeconfig="+k.Kubeconfig(t), "-el-image="+sink, "-el-port=8080",
		"-el-security-context=true", "-el-events=disable")
	cmd.Env = append(os.Environ(), "SYSTEM_NAMESPACE="+TektonNamespace,
		"CONFIG_LOGGING_NAME=config-logging-triggers", "CONFIG_OBSERVABILITY_NAME=config-observability-triggers",
		"CONFIG_DEFAULTS_NAME=config-defaults-triggers", "METRICS_DOMAIN=tekton.dev/triggers",
		"CONFIG_LEADERELECTION_NAME=config-leader-election-triggers-controller", "KUBERNETES_MIN_VERSION=v1.28.0")
	ports, err := knativePortsEnv()
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, ports...)
	return cmd, nil
}

// installTriggers applies the release config's CRDs (300-*.yaml, waiting
// until they are served), ClusterRoles (200-clusterrole.yaml) and
// ConfigMaps (config-*.yaml, into tekton-pipelines).
func installTriggers(k *Kube, config string) error {
	crdFiles, err := filepath.Glob(filepath.Join(config, "300-*.yaml"))
	if err != nil {
		return err
	}
	crds, err := LoadCRDs(crdFiles)
	if err != nil {
		return err
	}
	if _, err := envtest.InstallCRDs(k.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		return fmt.Errorf("installing Triggers' CRDs: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(config, "config-*.yaml"))
	if err != nil {
		return err
	}
	files = append(files, filepath.Join(config, "200-clusterrole.yaml"))
	for _, f := range files {
		if err := applyFile(k, f, TektonNamespace, "ConfigMap", "ClusterRole"); err != nil {
			return err
		}
	}
	return nil
}

// applyFile creates the objects of the given kinds in a multi-document
// YAML file, namespaced ones in ns.
func applyFile(k *Kube, path, ns string, kinds ...string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("decoding %s: %w", path, err)
		}
		if len(u.Object) == 0 || !slices.Contains(kinds, u.GetKind()) {
			continue
		}
		if u.GetKind() != "ClusterRole" {
			u.SetNamespace(ns)
		}
		if err := k.Client.Create(context.Background(), u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s %s from %s: %w", u.GetKind(), u.GetName(), path, err)
		}
	}
}

// logHas is a waitFor check: the process has logged s.
func logHas(p *process, s string) error {
	b, _ := os.ReadFile(p.log)
	if !strings.Contains(string(b), s) {
		return fmt.Errorf("%s has not logged %q", p.name, s)
	}
	return nil
}

// EventListenerURL is the address of the EventListener's sink pod once it
// is ready: this node has no kube-proxy, so its Service does not route,
// and a client on the host posts to the pod.
func EventListenerURL(ctx context.Context, k *Kube, ns, name string) (string, error) {
	pods := &corev1.PodList{}
	if err := k.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"eventlistener": name}); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
				return "http://" + p.Status.PodIP + ":8080", nil
			}
		}
	}
	return "", fmt.Errorf("EventListener %s/%s: no ready sink pod", ns, name)
}

// httpOK is a readiness check: url answers 200.
func httpOK(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}
