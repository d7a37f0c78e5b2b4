package kmod

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	configv1 "github.com/openshift/api/config/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// resolution is what kmod-build resolves from the cluster's objects before
// anything is built, and the plan for the ModuleDay0 as the client reads
// it; each field's error is kept as its message.
type resolution struct {
	Dockerfile, DockerfileErr string
	OSImage, OSImageErr       string // OS_AUTO from the payload ConfigMap
	DTKImage, DTKImageErr     string // DTK_AUTO from the ClusterVersion's release
	Plan                      Plan
	PlanErr                   string
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// resolveInputs reads md's inputs through c with the step's own functions.
func resolveInputs(ctx context.Context, t *testing.T, r registry.Remote, c client.Client, md *kmmv1beta1.ModuleDay0) resolution {
	t.Helper()
	objs, err := objects(ctx, c, md)
	if err != nil {
		t.Fatalf("reading the ConfigMaps of %s/%s: %v", md.Namespace, md.Name, err)
	}
	var res resolution
	res.Dockerfile, err = objs.dockerfile(md)
	res.DockerfileErr = errText(err)
	res.OSImage, err = objs.osAuto(md)
	res.OSImageErr = errText(err)
	res.DTKImage, err = driverToolkit(ctx, r, c, md)
	res.DTKImageErr = errText(err)
	live := &kmmv1beta1.ModuleDay0{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(md), live); err != nil {
		res.PlanErr = err.Error()
		return res
	}
	res.Plan, err = Decide(live, Facts{})
	res.PlanErr = errText(err)
	return res
}

// exportKmodInputs writes every object the kmod stages read from the
// apiserver into dir/cluster.yaml as the apiserver holds it (without
// managedFields, which no manifest carries).
func exportKmodInputs(t *testing.T, c client.Client, dir string) {
	t.Helper()
	var docs []string
	for _, l := range []struct{ apiVersion, kind string }{
		{kmmv1beta1.GroupVersion.String(), "ModuleDay0List"},
		{"v1", "ConfigMapList"},
		{"config.openshift.io/v1", "ClusterVersionList"},
	} {
		ul := &unstructured.UnstructuredList{}
		ul.SetAPIVersion(l.apiVersion)
		ul.SetKind(l.kind)
		if err := c.List(context.Background(), ul); err != nil {
			t.Fatalf("listing %s: %v", l.kind, err)
		}
		for _, u := range ul.Items {
			if u.GetName() == "kube-root-ca.crt" {
				continue // every namespace's
			}
			u.SetManagedFields(nil)
			b, err := yaml.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, string(b))
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clients returns the step's client of the apiserver and of a folder
// exported from it, each with its own workspace.
func clients(t *testing.T, e *env.Env) (onCluster, onFolder client.Client, folderWS work.Workspace) {
	t.Helper()
	src := t.TempDir()
	exportKmodInputs(t, e.Kube.Client, src)
	onCluster, err := newClient(&kube.KubeOptions{Source: kube.SourceCluster, Kubeconfig: e.Kube.Kubeconfig(t)}, work.Workspace{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	folderWS = work.Workspace{Root: t.TempDir()}
	if onFolder, err = newClient(&kube.KubeOptions{Source: "dir:" + src}, folderWS); err != nil {
		t.Fatalf("loading the exported folder: %v", err)
	}
	return onCluster, onFolder, folderWS
}

// clock is the time of day a progress line starts with.
var clock = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)

// recorded is what recordBuilt leaves: its progress lines and the
// ModuleDay0's status (the condition's time is the run's own).
type recorded struct {
	Log    string
	Status kmmv1beta1.ModuleDay0Status
}

func record(ctx context.Context, t *testing.T, c client.Client, md *kmmv1beta1.ModuleDay0, read func() *kmmv1beta1.ModuleDay0) recorded {
	t.Helper()
	var log bytes.Buffer
	if err := recordBuilt(ctx, c, md, ReasonBuilt, "built it", "sha256:"+strings.Repeat("ab", 32), step.NewProgress(&log, work.StageKmodBuild)); err != nil {
		t.Fatalf("recordBuilt: %v", err)
	}
	rec := recorded{Log: clock.ReplaceAllString(log.String(), "")}
	if live := read(); live != nil {
		rec.Status = live.Status
		for i := range rec.Status.Conditions {
			rec.Status.Conditions[i].LastTransitionTime = metav1.Time{}
		}
	}
	return rec
}

// TestKmodFolderAndAPIServerAgree: the kmod stages resolve the same
// Dockerfile, OS_AUTO, DTK_AUTO (from the ClusterVersion's release) and
// plan from objects in test/env's apiserver and from a folder exported
// from it, fail with the same messages when the Dockerfile ConfigMap, its
// key, the payload ConfigMap or the ClusterVersion is missing, and record
// the same ModuleDay0 status (a folder's as a file under
// work/kmod/manifests/). Namespace-less manifests resolve as they do once
// `kubectl apply` has put them in its namespace.
func TestKmodFolderAndAPIServerAgree(t *testing.T) {
	e := env.Start(t, env.Options{Kube: true, Registry: true})
	ctx := t.Context()
	kc := e.Kube.Client
	r := registry.Remote{Insecure: []string{e.Registry.Host}}
	osImage, dtk := e.Registry.Ref("payload/rhel-coreos:test"), e.Registry.Ref("payload/driver-toolkit:test")
	release := env.PushRelease(t, e.Registry.Ref("ocp/release:4.20.0"), "4.20.0", map[string]string{"driver-toolkit": dtk, "rhel-coreos": osImage})
	target := e.Registry.Ref("kmods/rhcos:414")
	const dockerfile = "ARG DTK_AUTO\nARG OS_AUTO\nFROM ${DTK_AUTO} AS builder\nFROM ${OS_AUTO}\n"

	// Namespace-less manifests first, while the apiserver holds no payload
	// ConfigMap: the folder is applied as `kubectl apply` without a
	// namespace of its own applies it, into "default".
	t.Run("namespace-less manifests", func(t *testing.T) {
		src := t.TempDir()
		manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nsless-dockerfile}\ndata:\n  dockerfile: |\n    FROM scratch\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + payload.OSImageURLMap + "}\ndata: {baseOSContainerImage: " + osImage + "}\n"
		if err := os.WriteFile(filepath.Join(src, "kmod.yaml"), []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		err := manifests.Walk(src, func(obj runtime.Object) error {
			o := obj.(client.Object)
			o.SetNamespace(metav1.NamespaceDefault)
			return kc.Create(ctx, o)
		})
		if err != nil {
			t.Fatalf("applying %s: %v", src, err)
		}
		onFolder, err := newClient(&kube.KubeOptions{Source: "dir:" + src}, work.Workspace{Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		onCluster, err := newClient(&kube.KubeOptions{Source: kube.SourceCluster, Kubeconfig: e.Kube.Kubeconfig(t)}, work.Workspace{Root: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		module := func(ns string) *kmmv1beta1.ModuleDay0 {
			return &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"}, Spec: kmmv1beta1.ModuleDay0Spec{OSMapping: kmmv1beta1.OSMapping{
				Build: &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "nsless-dockerfile"}}}}}
		}
		// A namespace-less ModuleDay0 lands beside its ConfigMap: found.
		cluster, folder := resolveInputs(ctx, t, r, onCluster, module(metav1.NamespaceDefault)), resolveInputs(ctx, t, r, onFolder, module(""))
		if cluster.Dockerfile != "FROM scratch\n" || cluster.Dockerfile != folder.Dockerfile || folder.DockerfileErr != "" {
			t.Errorf("a namespace-less ModuleDay0 and ConfigMap: Dockerfile %q on the apiserver, %q (%s) from the folder", cluster.Dockerfile, folder.Dockerfile, folder.DockerfileErr)
		}
		// One in openshift-kmm does not see it, and the namespace-less
		// payload ConfigMap is not the payload.
		cluster, folder = resolveInputs(ctx, t, r, onCluster, module("openshift-kmm")), resolveInputs(ctx, t, r, onFolder, module("openshift-kmm"))
		want := resolution{
			DockerfileErr: "ModuleDay0 openshift-kmm/m: spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/nsless-dockerfile not found",
			OSImageErr:    "ModuleDay0 openshift-kmm/m: finding OS_AUTO (no --os-image): reading payload: ConfigMap openshift-machine-config-operator/machine-config-osimageurl not found",
			DTKImageErr:   "ModuleDay0 openshift-kmm/m: finding DTK_AUTO (no --dtk-image): ClusterVersion version not found",
			PlanErr:       `moduleday0s.kmm.sigs.x-k8s.io "m" not found`,
		}
		if d := cmp.Diff(want, cluster); d != "" {
			t.Errorf("apiserver (-want +got):\n%s", d)
		}
		if d := cmp.Diff(cluster, folder); d != "" {
			t.Errorf("(-apiserver +folder):\n%s", d)
		}
	})

	for _, ns := range []string{"openshift-kmm", payload.Namespace} {
		if err := kc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	md := &kmmv1beta1.ModuleDay0{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-kmm", Name: "kiln-hello"}, Spec: kmmv1beta1.ModuleDay0Spec{
		MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
		OSMapping: kmmv1beta1.OSMapping{ContainerImage: target,
			Build: &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "kiln-hello-dockerfile"}},
			Sign: &kmmv1beta1.Sign{CertSecret: corev1.LocalObjectReference{Name: "cert"}, KeySecret: corev1.LocalObjectReference{Name: "key"},
				FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kiln-hello.ko"}}},
	}}
	dockerfileCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-kmm", Name: "kiln-hello-dockerfile"},
		Data: map[string]string{DockerfileKey: dockerfile}}
	cv := &configv1.ClusterVersion{ObjectMeta: metav1.ObjectMeta{Name: payload.ClusterVersionName},
		Spec: configv1.ClusterVersionSpec{ClusterID: "5ea4a7a4-0d3b-4a4b-9c1e-2f0c8a8c7d11"}}
	for _, o := range []client.Object{md.DeepCopy(), dockerfileCM, cv,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, Data: map[string]string{"baseOSContainerImage": osImage}}} {
		if err := kc.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	cv.Status = configv1.ClusterVersionStatus{Desired: configv1.Release{Version: "4.20.0", Image: release}, VersionHash: "h"}
	if err := kc.Status().Update(ctx, cv); err != nil {
		t.Fatalf("writing ClusterVersion status: %v", err)
	}
	const mdPrefix = "ModuleDay0 openshift-kmm/kiln-hello: "
	plan := Plan{Build: true, Sign: true, BuildTarget: target + "-unsigned", SignSource: target + "-unsigned",
		Reason: "build " + target + "-unsigned, then sign it into " + target}

	// Each step changes the apiserver's objects and says what kmod-build
	// must then resolve; the folder is exported after the change.
	steps := []struct {
		name   string
		change func(t *testing.T)
		want   resolution
	}{
		{name: "every input", change: func(*testing.T) {},
			want: resolution{Dockerfile: dockerfile, OSImage: osImage, DTKImage: dtk, Plan: plan}},
		{name: "ConfigMap without the dockerfile key", change: func(t *testing.T) {
			dockerfileCM.Data = map[string]string{"Dockerfile": dockerfile}
			if err := kc.Update(ctx, dockerfileCM); err != nil {
				t.Fatal(err)
			}
		}, want: resolution{DockerfileErr: mdPrefix + `spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kiln-hello-dockerfile has no "dockerfile" key`,
			OSImage: osImage, DTKImage: dtk, Plan: plan}},
		{name: "missing ConfigMap", change: func(t *testing.T) {
			if err := kc.Delete(ctx, dockerfileCM); err != nil {
				t.Fatal(err)
			}
		}, want: resolution{DockerfileErr: mdPrefix + "spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kiln-hello-dockerfile not found",
			OSImage: osImage, DTKImage: dtk, Plan: plan}},
		{name: "no ClusterVersion", change: func(t *testing.T) {
			if err := kc.Delete(ctx, cv); err != nil {
				t.Fatal(err)
			}
		}, want: resolution{DockerfileErr: mdPrefix + "spec.osMapping.build.dockerfileConfigMap: ConfigMap openshift-kmm/kiln-hello-dockerfile not found",
			OSImage: osImage, DTKImageErr: mdPrefix + "finding DTK_AUTO (no --dtk-image): ClusterVersion version not found", Plan: plan}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			s.change(t)
			onCluster, onFolder, _ := clients(t, e)
			cluster, folder := resolveInputs(ctx, t, r, onCluster, md), resolveInputs(ctx, t, r, onFolder, md)
			if d := cmp.Diff(s.want, cluster); d != "" {
				t.Errorf("apiserver (-want +got):\n%s", d)
			}
			if d := cmp.Diff(cluster, folder); d != "" {
				t.Errorf("(-apiserver +folder):\n%s", d)
			}
		})
	}

	t.Run("recorded status", func(t *testing.T) {
		onCluster, onFolder, ws := clients(t, e)
		cluster := record(ctx, t, onCluster, md, func() *kmmv1beta1.ModuleDay0 {
			live := &kmmv1beta1.ModuleDay0{}
			if err := kc.Get(ctx, client.ObjectKeyFromObject(md), live); err != nil {
				t.Fatal(err)
			}
			return live
		})
		folder := record(ctx, t, onFolder, md, func() *kmmv1beta1.ModuleDay0 {
			return readModuleDay0File(t, filepath.Join(ws.StageDir(work.StageKmodSign), ManifestsDir, "moduleday0s", "openshift-kmm_kiln-hello.yaml"))
		})
		if len(cluster.Status.Conditions) != 1 || cluster.Status.Conditions[0].Reason != ReasonBuilt || cluster.Status.ImageDigest == "" {
			t.Fatalf("status on the apiserver: %+v", cluster)
		}
		if d := cmp.Diff(cluster, folder); d != "" {
			t.Errorf("(-apiserver +folder):\n%s", d)
		}

		// A ModuleDay0 no longer there is reported alike, and nothing is
		// written.
		if err := kc.Delete(ctx, md.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		onCluster, onFolder, ws = clients(t, e)
		none := func() *kmmv1beta1.ModuleDay0 { return nil }
		cluster, folder = record(ctx, t, onCluster, md, none), record(ctx, t, onFolder, md, none)
		if want := "[kmod-build] ModuleDay0 openshift-kmm/kiln-hello is not in the cluster; its status is not updated\n"; cluster.Log != want {
			t.Errorf("log on the apiserver %q, want %q", cluster.Log, want)
		}
		if d := cmp.Diff(cluster, folder); d != "" {
			t.Errorf("gone (-apiserver +folder):\n%s", d)
		}
		if _, err := os.Stat(filepath.Join(ws.StageDir(work.StageKmodSign), ManifestsDir)); !os.IsNotExist(err) {
			t.Errorf("the folder run wrote manifests for a ModuleDay0 it does not hold: %v", err)
		}
	})
}

// readModuleDay0File decodes the ModuleDay0 a folder run wrote.
func readModuleDay0File(t *testing.T, p string) *kmmv1beta1.ModuleDay0 {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("the folder run's ModuleDay0: %v", err)
	}
	md := &kmmv1beta1.ModuleDay0{}
	if err := yaml.UnmarshalStrict(b, md); err != nil {
		t.Fatalf("decoding %s: %v", p, err)
	}
	return md
}
