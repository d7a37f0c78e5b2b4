package install

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/sigstore/cosign/v2/pkg/cosign"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/bootimage"
	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/mcosim"
)

// rbacKinds are what the RBAC test applies from the rendered install: the
// rest (Deployment, Tasks, PrometheusRule, admission policy) has no say in
// what a step may call.
var rbacKinds = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}

// noAPITasks run without any API access: their ServiceAccounts must get no
// grant at all.
var noAPITasks = []string{"kiln-image-build", "kiln-image-sign", "kiln-verify", "kiln-reproduce", "kiln-report"}

const installNS = "kiln"

func saUser(task string) string { return "system:serviceaccount:" + installNS + ":" + task }

// TestRBACMatchesSteps renders config/ with krusty, applies its
// namespaces, CRDs and RBAC to test/env's real apiserver, and runs each
// stage's real step code (cmd/cli's kiln-steps tree, as cmd/kiln-steps
// does) against it through a proxy that impersonates the Task's
// ServiceAccount and records every request. For each stage it requires:
//   - the step succeeds and did what it should (no rule is missing);
//   - no request was refused (a step that tolerates a 403 would hide one);
//   - every granted verb was used by some request, except the few listed,
//     with the reason, in the stage's allowUnused (no extra privilege).
func TestRBACMatchesSteps(t *testing.T) {
	objs, err := Render(ConfigDir())
	if err != nil {
		t.Fatal(err)
	}
	e := env.Start(t, env.Options{Kube: true, Registry: true, Buildah: true})
	ctx := context.Background()
	admin := e.Kube.Client
	for _, ns := range []string{bootimage.MCONamespace, bootimage.MachineAPINamespace, registry.TrustedCANamespace} {
		mustCreate(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	if err := Apply(ctx, admin, Select(objs, rbacKinds...)); err != nil {
		t.Fatal(err)
	}
	bootImageCluster(t, admin)

	t.Run("authorization is enforced", func(t *testing.T) {
		// Without this the test would prove nothing: a ServiceAccount
		// with no grant must be refused.
		p := StartProxy(t, e.Kube.Config, saUser("kiln-image-build"))
		c, err := client.New(p.Config(), client.Options{Scheme: e.Kube.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		err = c.List(ctx, &mcfgv1.MachineConfigList{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("kiln-image-build listing MachineConfigs: %v, want Forbidden", err)
		}
		if f := Forbidden(p.Requests()); len(f) != 1 || f[0].Resource != "machineconfigs" || f[0].Verb != "list" {
			t.Fatalf("recorded %v, want the one refused list", p.Requests())
		}
	})

	t.Run("tasks without API access", func(t *testing.T) {
		for _, task := range noAPITasks {
			g, err := Grants(objs, installNS, task)
			if err != nil {
				t.Fatal(err)
			}
			if len(g) > 0 {
				t.Errorf("ServiceAccount %s makes no API call but is granted:\n%s", task, Describe(g))
			}
		}
	})

	stages := []struct {
		task string
		run  func(t *testing.T, kubeconfig string)
		// allowUnused: grants the step needs on a path the scenario does
		// not take; key Grant.Key(), value why.
		allowUnused map[string]string
	}{
		{task: "kiln-render", run: func(t *testing.T, kc string) { renderStage(t, admin, kc, e.Registry.Ref("rbac/kmod-infra:1")) }},
		{task: "kiln-rollout", run: func(t *testing.T, kc string) { rolloutStage(t, e, kc) }},
		{task: "kiln-bootimages", run: func(t *testing.T, kc string) { bootImagesStage(t, admin, kc) },
			allowUnused: map[string]string{
				"get machinesets.machine.openshift.io ns=openshift-machine-api": "re-read of a MachineSet whose patch met a conflict (reconcile.go, pass.one)",
			}},
		{task: "kiln-kmod-build", run: func(t *testing.T, kc string) { kmodBuildStage(t, e, kc) }},
		{task: "kiln-kmod-sign", run: func(t *testing.T, kc string) { kmodSignStage(t, e, kc) }},
		{task: "kiln-prune", run: func(t *testing.T, kc string) { pruneStage(t, e, kc) }},
	}
	for _, s := range stages {
		t.Run(s.task, func(t *testing.T) {
			checkStage(t, e, objs, s.task, s.run, s.allowUnused)
		})
	}

	// config/capi, applied as a user opting Cluster API MachineSets in
	// does: the same ServiceAccount, only the Role of config/capi checked
	// for unused grants.
	t.Run("kiln-bootimages Cluster API", func(t *testing.T) {
		capi, err := Render(filepath.Join(ConfigDir(), "capi"))
		if err != nil {
			t.Fatal(err)
		}
		mustCreate(t, admin, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: bootimage.CAPINamespace}})
		if err := Apply(ctx, admin, capi); err != nil {
			t.Fatal(err)
		}
		checkStage(t, e, capi, "kiln-bootimages", func(t *testing.T, kc string) { capiStage(t, admin, kc) },
			map[string]string{
				"get awsmachinetemplates.infrastructure.cluster.x-k8s.io ns=openshift-cluster-api":     "AWS clusters (pkg/bootimage TestClusterAPIAWSHotLoop); this cluster is GCP",
				"create awsmachinetemplates.infrastructure.cluster.x-k8s.io ns=openshift-cluster-api":  "AWS clusters",
				"delete awsmachinetemplates.infrastructure.cluster.x-k8s.io ns=openshift-cluster-api":  "AWS clusters",
				"get machinesets.cluster.x-k8s.io ns=openshift-cluster-api":                            "re-read of a MachineSet whose patch met a conflict",
				"update bootimagehistories.machineconfiguration.openshift.io ns=openshift-cluster-api": "a MachineSet's second boot image update (the Machine API stage above covers the same code)",
			})
	})
}

// checkStage runs one stage as ServiceAccount sa and holds the grants
// objs give sa to what it called (see TestRBACMatchesSteps).
func checkStage(t *testing.T, e *env.Env, objs []*unstructured.Unstructured, sa string, run func(*testing.T, string), allowUnused map[string]string) {
	t.Helper()
	grants, err := Grants(objs, installNS, sa)
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) == 0 {
		t.Fatalf("ServiceAccount %s has no grants", sa)
	}
	p := StartProxy(t, e.Kube.Config, saUser(sa))
	run(t, p.Kubeconfig(t))
	reqs := p.Requests()
	if f := Forbidden(reqs); len(f) > 0 {
		t.Errorf("%s was refused (a rule is missing):\n%v", sa, f)
	}
	if u := Unused(grants, reqs, allowUnused); len(u) > 0 {
		t.Errorf("%s is granted more than its step uses:\n%srequests made:\n%s", sa, Describe(u), p.Summary())
	}
	for key := range allowUnused {
		if !hasKey(grants, key) {
			t.Errorf("allowUnused names %q, which %s is not granted", key, sa)
		}
	}
	t.Logf("%s: %d requests, %d grants\n%s", sa, len(reqs), len(grants), p.Summary())
}

func hasKey(gs []Grant, key string) bool {
	for _, g := range gs {
		if g.Key() == key {
			return true
		}
	}
	return false
}

// renderStage: pkg/render's custom-pool golden case plus a ModuleDay0 in
// namespace kiln, rendered from the cluster.
// kmodImage is the ModuleDay0's image: in the test registry, since
// kiln-prune later scans every ModuleDay0's repository.
func renderStage(t *testing.T, admin client.Client, kubeconfig, kmodImage string) {
	objs, err := mcrender.LoadDir(filepath.Join(env.RepoRoot(), "pkg", "render", "testdata", "golden", "custom-pool-over-worker"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs.Pools {
		mustCreate(t, admin, o)
	}
	for _, o := range objs.Configs {
		mustCreate(t, admin, o)
	}
	for _, o := range objs.ConfigMaps {
		o.Namespace = bootimage.MCONamespace
		mustCreate(t, admin, o)
	}
	mustCreate(t, admin, &kmmv1beta1.ModuleDay0{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: installNS},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
			OSMapping:                 kmmv1beta1.OSMapping{ContainerImage: kmodImage},
		},
	})
	work, results := t.TempDir(), t.TempDir()
	code, out := runStep(t, workspace.StageRender,
		"--source", "cluster", "--kubeconfig", kubeconfig, "--pool", "infra", "--work", work, "--results-dir", results)
	if code != exitcode.ExitOK {
		t.Fatalf("render as kiln-render: exit %d\n%s", code, out)
	}
	if n := result(t, results, "RENDERED_NAME"); !strings.HasPrefix(n, "rendered-infra-") || result(t, results, "HAS_KMOD") != "true" {
		t.Errorf("render results: RENDERED_NAME %q, HAS_KMOD %q", n, result(t, results, "HAS_KMOD"))
	}
}

// writeMCOInputs saves what render leaves for the drift gate
// (render/mco-inputs.json), read from the cluster as render reads it.
func writeMCOInputs(t *testing.T, c client.Client, pool, work string, d mcrender.Defaults) {
	t.Helper()
	ctx := context.Background()
	p := &mcfgv1.MachineConfigPool{}
	if err := c.Get(ctx, client.ObjectKey{Name: pool}, p); err != nil {
		t.Fatal(err)
	}
	list := &mcfgv1.MachineConfigList{}
	if err := c.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	all := make([]*mcfgv1.MachineConfig, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	in, err := mcrender.NewMCOInputs(p, all, d)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(in)
	path := workspace.Workspace{Root: work}.MCOInputsPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// rolloutStage: a pool of two nodes driven by test/mcosim, and three
// rollouts of signed images: the first degrades a node and rolls back
// (kiln's MC created, then deleted), the second uses a canary (pool
// patched: maxUnavailable, pause; canary Node read), the third updates
// kiln's MC in place.
func rolloutStage(t *testing.T, e *env.Env, kubeconfig string) {
	admin := e.Kube.Client
	ctx := context.Background()
	const pool, payloadImage = "rbac", "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	sim, err := mcosim.Start(ctx, mcosim.Options{Client: admin,
		Renderer: mcosim.KilnRenderer{Defaults: mcrender.Defaults{OSImageURL: payloadImage}}, StepDelay: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)

	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	pub := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(pub, keys.PublicBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, n := range []string{"a", "b", "c"} {
		img := pushRandom(t, e.Registry.Ref("rbac/"+n+":1"))
		inputs, err := trust.NodeImage{Pool: "worker", BaseImage: img, RenderedName: "rendered-worker-" + n,
			RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast",
			NodeLint: nodeimport.RulesVersion}.Inputs()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sign.Sign(ctx, registry.Remote{Insecure: []string{e.Registry.Host}}, sign.SignInput{Image: img, Key: keys.PrivateBytes, Password: []byte("pw"), Inputs: inputs}); err != nil {
			t.Fatal(err)
		}
		images = append(images, img)
	}

	role := map[string]string{rollout.RoleLabel: pool}
	mustCreate(t, admin,
		&mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: mcfgv1.MachineConfigPoolSpec{
			MachineConfigSelector: &metav1.LabelSelector{MatchLabels: role},
			NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/" + pool: ""}},
		}},
		// Unsorted kernel arguments: the drift run's quirk sorts them.
		&mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "00-" + pool, Labels: role},
			Spec: mcfgv1.MachineConfigSpec{OSImageURL: payloadImage, KernelArguments: []string{"quiet", "audit=1"},
				Config: runtime.RawExtension{Raw: []byte(`{"ignition":{"version":"3.5.0"}}`)}}},
	)
	for i := range 2 {
		lbl := map[string]string{"node-role.kubernetes.io/" + pool: ""}
		if i == 0 { // fails the first image only
			lbl[mcosim.DegradeAtLabel] = "Drained"
			lbl[mcosim.DegradeImageLabel] = strings.SplitN(images[0], "@sha256:", 2)[1][:60]
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: pool + "-" + string(rune('0'+i)), Labels: lbl}}
		mustCreate(t, admin, n)
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		mustStatus(t, admin, n)
	}

	run := func(image string, extra ...string) (int, string, string) {
		work, results := t.TempDir(), t.TempDir()
		writeMCOInputs(t, admin, pool, work, mcrender.Defaults{OSImageURL: payloadImage})
		args := append([]string{"--source", "cluster", "--kubeconfig", kubeconfig, "--pool", pool, "--image", image,
			"--public-key", pub, "--insecure-registry", e.Registry.Host, "--work", work, "--results-dir", results,
			"--timeout", "90s", "--settle-timeout", "60s"}, extra...)
		code, out := runStep(t, workspace.StageRollout, args...)
		return code, result(t, results, "ROLLOUT_STATE"), out
	}
	if code, state, out := run(images[0]); code != exitcode.ExitRolledBack || state != rollout.StateRolledBack {
		t.Fatalf("first rollout (node degrades): exit %d, state %s, want a rollback\n%s", code, state, out)
	}
	mc := &mcfgv1.MachineConfig{}
	if err := admin.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); !apierrors.IsNotFound(err) {
		t.Fatalf("after rolling back a first rollout kiln's MachineConfig should be gone: %v", err)
	}
	if code, state, out := run(images[1], "--canary", "1"); code != exitcode.ExitOK || state != rollout.StateSucceeded {
		t.Fatalf("canary rollout: exit %d, state %s\n%s", code, state, out)
	}
	if code, state, out := run(images[2]); code != exitcode.ExitOK || state != rollout.StateSucceeded {
		t.Fatalf("third rollout: exit %d, state %s\n%s", code, state, out)
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); err != nil || mc.Spec.OSImageURL != images[2] {
		t.Fatalf("kiln's MachineConfig: %v, osImageURL %q, want %s", err, mc.Spec.OSImageURL, images[2])
	}
	// The drift gate's path: mcosim renders with a quirk, the gate records
	// an Event on the pool and puts kiln's MachineConfig back.
	p := &mcfgv1.MachineConfigPool{}
	if err := admin.Get(ctx, client.ObjectKey{Name: pool}, p); err != nil {
		t.Fatal(err)
	}
	base := p.DeepCopy()
	p.Annotations = map[string]string{mcosim.RenderQuirkAnnotation: mcosim.QuirkSortKernelArguments}
	if err := admin.Patch(ctx, p, client.MergeFrom(base)); err != nil {
		t.Fatal(err)
	}
	if code, state, out := run(images[1]); code != exitcode.ExitDrift || state != rollout.StateDriftDetected {
		t.Fatalf("drift: exit %d, state %s\n%s", code, state, out)
	}
	if err := admin.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(pool)}, mc); err != nil || mc.Spec.OSImageURL != images[2] {
		t.Fatalf("after the drift, kiln's MachineConfig: %v, osImageURL %q, want %s back", err, mc.Spec.OSImageURL, images[2])
	}
}

// bootImagesStage: two passes over the stale GCP MachineSet. The first
// patches it, upgrades its spec-2.2 stub Secret and creates its
// BootImageHistory; the MachineSet is then put back (as a user would), and
// the second pass patches it again and updates the history.
func bootImagesStage(t *testing.T, admin client.Client, kubeconfig string) {
	ctx := context.Background()
	run := func() {
		t.Helper()
		work, results := t.TempDir(), t.TempDir()
		code, out := runStep(t, workspace.StageBootImages,
			"--source", "cluster", "--kubeconfig", kubeconfig, "--work", work, "--results-dir", results,
			"--stable-timeout", "20s", "--default-arch", "x86_64")
		if code != exitcode.ExitOK || result(t, results, bootimage.ResultPatched) != "1" {
			t.Fatalf("bootimages as kiln-bootimages: exit %d, %s=%q\n%s", code, bootimage.ResultPatched, result(t, results, bootimage.ResultPatched), out)
		}
	}
	run()
	sec := &corev1.Secret{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: bootimage.MachineAPINamespace, Name: "worker-user-data"}, sec); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sec.Data[bootimage.UserDataKey]), `"version":"3.`) {
		t.Errorf("stub Secret not upgraded to spec 3: %s", sec.Data[bootimage.UserDataKey])
	}
	mcfg := &operatorv1.MachineConfiguration{}
	if err := admin.Get(ctx, client.ObjectKey{Name: bootimage.MachineConfigurationName}, mcfg); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(mcfg.Status.Conditions, bootimage.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("MachineConfiguration status %s: %+v", bootimage.ConditionDegraded, c)
	}
	ms := &machinev1beta1.MachineSet{}
	if err := admin.Get(ctx, client.ObjectKey{Namespace: bootimage.MachineAPINamespace, Name: "worker-a"}, ms); err != nil {
		t.Fatal(err)
	}
	stale := gcpMachineSet(t, "worker-a", staleGCPImage)
	ms.Spec.Template.Spec.ProviderSpec = stale.Spec.Template.Spec.ProviderSpec
	if err := admin.Update(ctx, ms); err != nil {
		t.Fatal(err)
	}
	run()
}

// kmodSignStage: a ModuleDay0 in namespace kiln whose sign section names
// an unsigned image with a real module; kmod-sign signs and pushes it and
// records Built on the ModuleDay0's status.
func kmodSignStage(t *testing.T, e *env.Env, kubeconfig string) {
	ctx := context.Background()
	unsigned := push(t, e.Registry.Ref("rbac/kmod:unsigned"), kmodImage(t))
	md := &kmmv1beta1.ModuleDay0{
		TypeMeta:   metav1.TypeMeta{APIVersion: kmmv1beta1.GroupVersion.String(), Kind: "ModuleDay0"},
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-kmod", Namespace: installNS},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/rbac": ""},
			OSMapping: kmmv1beta1.OSMapping{ContainerImage: e.Registry.Ref("rbac/kmod:signed"),
				Sign: &kmmv1beta1.Sign{UnsignedImage: unsigned,
					CertSecret: corev1.LocalObjectReference{Name: "cert"}, KeySecret: corev1.LocalObjectReference{Name: "key"},
					FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"}}},
		},
	}
	mustCreate(t, e.Kube.Client, md)
	work, results := t.TempDir(), t.TempDir()
	ws := workspace.Workspace{Root: work}
	if _, err := ws.Ensure(workspace.StageRender); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(md) // as render leaves it
	if err := os.WriteFile(ws.ModuleDay0Path(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	cert, key := env.ModuleSigningPair(t, "kiln rbac test signer")
	cosignKey, cosignPass := cosignKeyFiles(t)
	code, out := runStep(t, workspace.StageKmodSign,
		"--source", "cluster", "--kubeconfig", kubeconfig, "--pool", "rbac", "--work", work, "--results-dir", results,
		"--module-cert", cert, "--module-key", key, "--insecure-registry", e.Registry.Host,
		"--key", cosignKey, "--key-password-file", cosignPass)
	if code != exitcode.ExitOK {
		t.Fatalf("kmod-sign as kiln-kmod-sign: exit %d\n%s", code, out)
	}
	live := &kmmv1beta1.ModuleDay0{}
	if err := e.Kube.Client.Get(ctx, client.ObjectKeyFromObject(md), live); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(live.Status.Conditions, kmmv1beta1.ConditionBuilt); c == nil || c.Status != metav1.ConditionTrue ||
		live.Status.ImageDigest != result(t, results, "KMOD_IMAGE_DIGEST") {
		t.Errorf("ModuleDay0 status after kmod-sign: %+v", live.Status)
	}
}

// cosignKeyFiles writes a cosign key and its password (the signing-key
// workspace the kmod Tasks attest with).
func cosignKeyFiles(t *testing.T) (key, password string) {
	t.Helper()
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte("pw"), nil })
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key, password = filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.password")
	if err := os.WriteFile(key, keys.PrivateBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(password, []byte("pw"), 0o600); err != nil {
		t.Fatal(err)
	}
	return key, password
}

// kmodBuildStage: a ModuleDay0 in namespace kiln with a one-stage
// Dockerfile in a ConfigMap beside it; buildah builds it on a test OS
// image and pushes containerImage, and the step records Built. The
// options struct is filled directly rather than through flags only to
// hand buildah test/env's private storage (Buildah.Env has no flag); Run
// is the function cmd/kiln-steps calls.
func kmodBuildStage(t *testing.T, e *env.Env, kubeconfig string) {
	ctx := context.Background()
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	osImage := env.PushOSImage(t, e.Registry.Ref("rbac/rhel-coreos:test"), kver)
	md := &kmmv1beta1.ModuleDay0{
		TypeMeta:   metav1.TypeMeta{APIVersion: kmmv1beta1.GroupVersion.String(), Kind: "ModuleDay0"},
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-build", Namespace: installNS},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/rbac": ""},
			OSMapping: kmmv1beta1.OSMapping{ContainerImage: e.Registry.Ref("rbac/kmod-build:1"),
				Build: &kmmv1beta1.Build{DockerfileConfigMap: corev1.LocalObjectReference{Name: "rbac-dockerfile"}}},
		},
	}
	mustCreate(t, e.Kube.Client,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rbac-dockerfile", Namespace: installNS}, Data: map[string]string{
			kmod.DockerfileKey: "ARG OS_AUTO\nFROM ${OS_AUTO}\nARG KERNEL_FULL_VERSION\nRUN mkdir -p /opt/lib/modules/${KERNEL_FULL_VERSION}\n"}},
		md)
	work, results := t.TempDir(), t.TempDir()
	ws := workspace.Workspace{Root: work}
	if _, err := ws.Ensure(workspace.StageRender); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(md)
	if err := os.WriteFile(ws.ModuleDay0Path(), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	cosignKey, cosignPass := cosignKeyFiles(t)
	o := &kmod.BuildOptions{
		Options:         step.Options{Work: work, ResultsDir: results, Pool: "rbac"},
		RegistryOptions: registry.RegistryOptions{Insecure: []string{e.Registry.Host}},
		KubeOptions:     kube.KubeOptions{Source: "cluster", Kubeconfig: kubeconfig},
		// OS_AUTO is given, yet the step still reads the payload
		// ConfigMap (it always does in cluster mode).
		OSImage: osImage, SecretsDir: t.TempDir(),
		Buildah: buildah.Buildah{Env: e.Buildah.Env},
	}
	if err := o.Run(ctx, step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("kmod-build as kiln-kmod-build: %v\n%s", err, out.String())
	}
	// The Task's attest step signs, attests and records the Built status.
	a := &kmod.AttestOptions{Options: o.Options, RegistryOptions: o.RegistryOptions, KubeOptions: o.KubeOptions,
		Attest: sign.AttestOptions{SigningOptions: sign.SigningOptions{KeyPath: cosignKey}, PasswordFile: cosignPass}}
	if err := a.Run(ctx, step.Streams{Out: &out, Err: &out}); err != nil {
		t.Fatalf("kmod-attest as kiln-kmod-build: %v\n%s", err, out.String())
	}
	live := &kmmv1beta1.ModuleDay0{}
	if err := e.Kube.Client.Get(ctx, client.ObjectKeyFromObject(md), live); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(live.Status.Conditions, kmmv1beta1.ConditionBuilt); c == nil || c.Status != metav1.ConditionTrue ||
		live.Status.ImageDigest != result(t, results, "KMOD_IMAGE_DIGEST") {
		t.Errorf("ModuleDay0 status after kmod-build: %+v", live.Status)
	}
}

// capiStage: one Cluster API MachineSet on a GCPMachineTemplate with a
// stale image. bootimages --capi-mode All clones the template under a
// content-hash name, points the MachineSet at the clone, records the
// history and deletes the template no one uses any more.
func capiStage(t *testing.T, admin client.Client, kubeconfig string) {
	ctx := context.Background()
	tmpl := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bootimage.InfraGroup + "/v1beta1", "kind": "GCPMachineTemplate",
		"metadata": map[string]any{"name": "ci-7xk2p-worker-a", "namespace": bootimage.CAPINamespace},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"instanceType": "n1-standard-4", "image": staleGCPImage, "subnet": "ci-7xk2p-worker-subnet"}}},
	}}
	sel := map[string]any{"cluster.x-k8s.io/set-name": "worker-a"}
	ms := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": bootimage.CAPIGroup + "/v1beta2", "kind": "MachineSet",
		"metadata": map[string]any{"name": "worker-a", "namespace": bootimage.CAPINamespace},
		"spec": map[string]any{"clusterName": "ci-7xk2p", "replicas": int64(1), "selector": map[string]any{"matchLabels": sel},
			"template": map[string]any{"metadata": map[string]any{"labels": sel}, "spec": map[string]any{
				"clusterName": "ci-7xk2p", "bootstrap": map[string]any{"dataSecretName": "worker-user-data"},
				"infrastructureRef": map[string]any{"apiGroup": bootimage.InfraGroup, "kind": "GCPMachineTemplate", "name": "ci-7xk2p-worker-a"}}}},
	}}
	mustCreate(t, admin, tmpl, ms)
	work, results := t.TempDir(), t.TempDir()
	code, out := runStep(t, workspace.StageBootImages,
		"--source", "cluster", "--kubeconfig", kubeconfig, "--work", work, "--results-dir", results,
		"--stable-timeout", "20s", "--default-arch", "x86_64", "--capi-mode", "All")
	if code != exitcode.ExitOK || result(t, results, bootimage.ResultPatched) != "1" {
		t.Fatalf("bootimages --capi-mode All as kiln-bootimages: exit %d, %s=%q\n%s", code, bootimage.ResultPatched, result(t, results, bootimage.ResultPatched), out)
	}
	old := tmpl.DeepCopy()
	if err := admin.Get(ctx, client.ObjectKeyFromObject(old), old); !apierrors.IsNotFound(err) {
		t.Errorf("the replaced template should be garbage-collected: %v", err)
	}
}
