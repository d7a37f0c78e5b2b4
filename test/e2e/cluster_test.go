package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kiln-dev/kiln/examples"
	"github.com/kiln-dev/kiln/pkg/localrun"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/release"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/install"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// Names the scenario uses.
const (
	kilnNS       = "kiln"
	storageClass = "kiln-e2e"
	// sampleRegistry is the registry host examples/cluster names; the
	// scenario's registry listens on the host IP instead, so that pods
	// reach it.
	sampleRegistry = "127.0.0.1:5555"
	simulatedTaint = "kiln.dev/simulated-node"
)

// cluster is one real node running Tekton, kiln installed from config/
// as a user installs it, and test/mcosim playing MCO for the pools'
// simulated nodes.
type cluster struct {
	t        *testing.T
	kube     *env.Kube
	node     *env.Node
	reg      *env.Registry
	chains   *env.Chains
	c        client.Client
	hostIP   string
	keys     localrun.LocalKeys
	manifest string // examples/cluster with the registry host rewritten
	// dtk is the driver toolkit on the test's registry. The sample release
	// image names it on the sample registry (its digest is pinned), which
	// pods cannot reach, so runs get it as the dtk-image param, the
	// override a disconnected cluster uses too.
	dtk string
	// changes are the triggering changes the scenario made, in order.
	changes []change
	// release is what make images pushed; steps is its kiln-steps image,
	// which every kiln Task runs.
	release *release.Published
	steps   string
}

// startCluster brings up the parts in dependency order. Every part stops
// when t ends.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	// Errors of mcosim's controllers, in the test's output.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx := t.Context()
	c := &cluster{t: t, hostIP: env.HostIP(t)}
	// On a private address of this host, which pods reach and which
	// Chains reads over plain HTTP (env.PrivateHostIP).
	c.reg = env.StartRegistry(t, env.RegistryOptions{Addr: env.PrivateHostIP(t)})
	c.kube = env.StartKubeWith(t, env.KubeOptions{Address: c.hostIP})
	c.c = c.kube.Client
	// The node pulls kiln's images from the registry make images pushed
	// them to, as a cluster pulls from a user's registry.
	c.node = env.StartNode(t, c.kube, env.NodeOptions{PlainHTTPRegistries: []string{c.reg.Host}})
	env.StartTekton(t, c.kube, c.node)
	// Chains as a user configures it (README "Supply chain"): it signs and
	// attests what the TaskRuns' results name, with its own key.
	c.chains = env.StartChains(t, c.kube, env.ChainsOptions{Config: env.ChainsConfig()})
	// Every run's work workspace claims one volume for good (runs are kept,
	// and their claims with them). With the upgrade-ahead phase (6 ahead
	// runs, 3 upgrade runs) 24 were all taken by the catalog's kmod-build
	// test, whose run then sat pending; the catalog tests after it take
	// more. They are folders; the size is nominal.
	c.node.HostPathPVs(t, 48, storageClass, "2Gi")

	c.makeImages(ctx)

	// Everything the trigger reads exists before it starts, as on a
	// cluster where kiln is installed last.
	c.manifest = rewriteSample(t, c.reg.Host)
	c.pushSampleImages(ctx)
	c.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kilnNS}})
	c.configure(ctx)
	c.applySample(ctx)
	osURLs := &corev1.ConfigMap{}
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: payload.Namespace, Name: payload.OSImageURLMap}, osURLs); err != nil {
		t.Fatal(err)
	}
	// mcosim renders as MCO does with the payload's images as defaults;
	// kiln's osImageURL MachineConfig overrides them once a run rolls out.
	sim, err := mcosim.Start(context.Background(), mcosim.Options{Client: c.c,
		Renderer: mcosim.KilnRenderer{Defaults: mcrender.Defaults{
			OSImageURL: osURLs.Data["baseOSContainerImage"], ExtensionsImage: osURLs.Data["baseOSExtensionsContainerImage"],
			ReleaseVersion: osURLs.Data["releaseVersion"]}},
		StepDelay: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	c.noteChange("kiln installed")
	c.installKiln(ctx)
	return c
}

// releaseRepo is where the scenario's make images pushes, and releaseTag
// its tag.
const (
	releaseRepo = "kiln-release"
	releaseTag  = "e2e"
)

// makeImages does what `make images REGISTRY=<registry>/kiln-release`
// does (pkg/release.MakeImages): both images built from this checkout,
// pushed to the scenario's registry, signed with a release key and
// attested.
func (c *cluster) makeImages(ctx context.Context) {
	keys := env.CosignKeys(c.t)
	attest := sign.DefaultAttestOptions()
	attest.KeyPath, attest.PasswordFile = filepath.Join(keys, "cosign.key"), filepath.Join(keys, "cosign.password")
	p, err := release.MakeImages(ctx, release.ImagesOptions{Root: env.RepoRoot(), StepsBase: env.StepsBase(c.t),
		Registry: c.reg.Host + "/" + releaseRepo, Tag: releaseTag, Platform: release.Platform{OS: "linux", Arch: runtime.GOARCH},
		Remote: registry.Remote{Insecure: []string{c.reg.Host}}, Sign: attest.Input, OutDir: c.t.TempDir()}, os.Stderr)
	if err != nil {
		c.t.Fatalf("make images: %v", err)
	}
	c.release = p
	c.steps = p.Steps.Image
}

// rewriteSample copies examples/cluster with the sample registry host
// replaced by host; the images keep their digests, so the pinned
// references stay valid.
func rewriteSample(t *testing.T, host string) string {
	t.Helper()
	src := filepath.Join(env.RepoRoot(), "examples", "cluster")
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, []byte(strings.ReplaceAll(string(b), sampleRegistry, host)), 0o644)
	})
	if err != nil {
		t.Fatalf("rewriting examples/cluster for registry %s: %v", host, err)
	}
	return dst
}

func (c *cluster) pushSampleImages(ctx context.Context) {
	images, err := examples.Images()
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := examples.Push(ctx, c.reg.Host, images); err != nil {
		c.t.Fatal(err)
	}
	tar, _, err := env.DTKTarball()
	if err != nil {
		c.t.Fatal(err)
	}
	if c.dtk, err = examples.PushDriverToolkit(ctx, c.reg.Host, tar); err != nil {
		c.t.Fatal(err)
	}
}

// installKiln does what `make install` does (pkg/release.MakeInstall):
// the overlay of config/ with the pushed digests pinned, applied with
// server-side apply. Its patches are this cluster's: the trigger reaches
// the plain-HTTP registry and the apiserver's address (this node has no
// kube-proxy, so the kubernetes Service's cluster IP does not route). The
// PrometheusRule is left out by the install itself: this cluster serves
// no monitoring API.
func (c *cluster) installKiln(ctx context.Context) {
	dir := c.t.TempDir()
	patch := release.Patch{Target: release.Target("Deployment", release.TriggerName), Ops: c.triggerPatch()}
	_, err := release.MakeInstall(ctx, release.InstallOptions{Config: install.ConfigDir(), OverlayDir: dir, Published: c.release,
		Registry: c.reg.Host + "/" + releaseRepo, Patches: []release.Patch{patch}, Client: c.c}, os.Stderr)
	if err != nil {
		c.t.Fatalf("make install: %v", err)
	}
	objs, err := release.Render(dir)
	if err != nil {
		c.t.Fatal(err)
	}
	var kmod []*unstructured.Unstructured
	for _, o := range objs {
		if kmodRBAC[o.GetName()] && o.GetNamespace() == kilnNS && (o.GetKind() == "Role" || o.GetKind() == "RoleBinding") {
			kmod = append(kmod, inNamespace(o, kmodNS))
		}
	}
	if err := install.Apply(ctx, c.c, kmod); err != nil {
		c.t.Fatalf("copying the kmod Roles to %s: %v", kmodNS, err)
	}
}

// The sample's ModuleDay0 lives in openshift-kmm, not in kiln; as
// config/rbac/kmod.yaml tells users, the kmod Tasks' Roles and
// RoleBindings are copied to its namespace.
const kmodNS = "openshift-kmm"

var kmodRBAC = map[string]bool{"kiln-kmod-build": true, "kiln-kmod-sign": true}

func inNamespace(o *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	cp := o.DeepCopy()
	cp.SetNamespace(ns)
	return cp
}

// triggerPatch is the JSON 6902 patch of the trigger's Deployment: the
// plain-HTTP registry, a short settle time, and the apiserver's address.
func (c *cluster) triggerPatch() string {
	var env []any
	for k, v := range c.apiserverEnv() {
		env = append(env, map[string]any{"name": k, "value": v})
	}
	ops := []map[string]any{
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--insecure-registry=" + c.reg.Host},
		{"op": "add", "path": "/spec/template/spec/containers/0/args/-", "value": "--settle=1s"},
		{"op": "add", "path": "/spec/template/spec/containers/0/env", "value": env},
	}
	b, err := json.Marshal(ops)
	if err != nil {
		c.t.Fatal(err)
	}
	return string(b)
}

// apiserverEnv overrides the service environment the kubelet injects, so
// that in-cluster clients reach the apiserver on the host IP.
func (c *cluster) apiserverEnv() map[string]string {
	host, port := c.kube.HostPort()
	return map[string]string{"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}
}

// configure writes kiln-config and the Secrets its workspaces name, with
// a cosign pair and a kernel-module signing pair made as local mode makes
// them.
func (c *cluster) configure(ctx context.Context) {
	keys, err := localrun.EnsureLocalKeys(c.t.TempDir(), "")
	if err != nil {
		c.t.Fatal(err)
	}
	c.keys = keys
	secret := func(ns, name, dir string, files ...string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string][]byte{}}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				c.t.Fatal(err)
			}
			s.Data[f] = b
		}
		return s
	}
	auth := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kiln-registry-auth", Namespace: kilnNS},
		Data: map[string][]byte{"config.json": []byte(`{"auths":{}}`)}}
	podEnv := c.apiserverEnv()
	podEnv["KILN_INSECURE_REGISTRY"] = c.reg.Host
	var envYAML strings.Builder
	for k, v := range podEnv {
		fmt.Fprintf(&envYAML, "  - name: %s\n    value: %q\n", k, v)
	}
	cfg := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: trigger.ConfigName, Namespace: kilnNS}, Data: map[string]string{
		"repository": c.reg.Host + "/kiln/node-image-{pool}",
		"timeout":    "30m",
		// No kiln-image: the runs use the Pipeline's default, which the
		// install pinned to the pushed kiln-steps.
		"params":      fmt.Sprintf("dtk-image: %s\ncanary: \"1\"\nrollout-timeout: 10m\n", c.dtk),
		"podTemplate": "env:\n" + envYAML.String(),
		"workspaces": "- name: work\n  volumeClaimTemplate:\n    spec:\n      storageClassName: " + storageClass +
			"\n      accessModes: [ReadWriteOnce]\n      resources: {requests: {storage: 1Gi}}\n" +
			"- name: registry-auth\n  secret: {secretName: kiln-registry-auth}\n" +
			"- name: signing-key\n  secret: {secretName: kiln-cosign-key}\n" +
			"- name: public-key\n  secret: {secretName: kiln-cosign-pub}\n" +
			"- name: kmod-signing-cert\n  secret: {secretName: kiln-hello-signing-cert}\n" +
			"- name: kmod-signing-key\n  secret: {secretName: kiln-hello-signing-key}\n",
	}}
	for _, o := range []client.Object{
		secret(kilnNS, "kiln-cosign-key", keys.Cosign, "cosign.key", "cosign.password"),
		secret(kilnNS, "kiln-cosign-pub", keys.Cosign, "cosign.pub"),
		secret(kilnNS, "kiln-hello-signing-cert", keys.KmodCert, "cert"),
		secret(kilnNS, "kiln-hello-signing-key", keys.KmodKey, "key"),
		auth, cfg,
	} {
		c.create(ctx, o)
	}
}

// applySample creates examples/cluster's objects (statuses through the
// status subresource) and two simulated nodes per pool. The simulated
// nodes carry a NoSchedule taint: pods run on the real node only, and
// mcosim's cordons never block the pipeline.
func (c *cluster) applySample(ctx context.Context) {
	for _, ns := range []string{"openshift-machine-api", "openshift-machine-config-operator", "openshift-config", kmodNS} {
		c.create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	objs, err := examples.Objects(c.manifest)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, o := range objs {
		status := examples.StatusOf(o)
		c.create(ctx, o)
		if status != nil {
			if err := c.c.Status().Update(ctx, status(o)); err != nil {
				c.t.Fatalf("writing the status of %T %s: %v", o, o.GetName(), err)
			}
		}
	}
	for _, pool := range []string{"worker", "master", "infra"} {
		for i := range 2 {
			c.simulatedNode(ctx, fmt.Sprintf("%s-%d", pool, i), pool)
		}
	}
}

func (c *cluster) simulatedNode(ctx context.Context, name, pool string) {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"node-role.kubernetes.io/" + pool: ""}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: simulatedTaint, Effect: corev1.TaintEffectNoSchedule}}},
	}
	c.create(ctx, n)
	// The controller-manager's TTL controller annotates new Nodes too.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.c.Get(ctx, client.ObjectKeyFromObject(n), n); err != nil {
			return err
		}
		now := metav1.Now()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now}}
		n.Status.NodeInfo.OSImage = examples.NodeOSImage
		return c.c.Status().Update(ctx, n)
	})
	if err != nil {
		c.t.Fatalf("writing the status of Node %s: %v", name, err)
	}
}

func (c *cluster) create(ctx context.Context, o client.Object) {
	c.t.Helper()
	if err := c.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		c.t.Fatalf("creating %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
	}
}

// rendered is the pool's rendered MachineConfig name as kiln renders it
// from the cluster, for assertions on the runs' results.
func (c *cluster) rendered(ctx context.Context, pool string) string {
	objs, err := mcrender.LoadCluster(ctx, c.c)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := render.Run(ctx, objs, pool, &render.Fetcher{}, nil)
	if err != nil {
		c.t.Fatalf("rendering %s: %v", pool, err)
	}
	return out.Result.Config.Name
}
