package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/pkg/trigger"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/install"
)

// gitOps is the GitOps scenario's fixture: a Git repository served to the
// pods, the webhook secret, and a count of the interceptor's verdicts.
type gitOps struct {
	cloneURL      string
	before, after string
	changed       string // the file the pushed commit changes
	secret        []byte
	accepted      atomic.Int32
	rejected      atomic.Int32
}

const (
	gitOpsListener = "kiln-gitops"
	gitOpsPool     = "worker"
	// The pushed commit moves the worker pool to another NTP server.
	ntpBefore, ntpAfter = "clock2.example.com", "clock3.example.com"
)

// testGitOpsPush is the GitOps flow of config/samples/triggers on real
// Tekton Triggers: its EventListener, TriggerBinding and TriggerTemplate as
// shipped, fed a GitHub push of a commit that edits a MachineConfig. One
// PipelineRun of kiln-gitops-node-image follows, labelled for its pool and
// commit, and builds the pushed manifests; a redelivery of the same push
// makes no second run, and a push with a wrong signature none at all. The
// cluster never syncs the commit, so the drift gate holds the rollout.
func (c *cluster) testGitOpsPush(ctx context.Context) {
	t := c.t
	kilnMC := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(gitOpsPool)}, kilnMC); err != nil {
		t.Fatal(err)
	}
	before := kilnMC.Spec.OSImageURL
	env.StartTriggers(t, c.kube, c.node)
	g := c.serveGitOpsRepo()
	g.secret = []byte("kiln-e2e-webhook-secret")
	c.installGitOps(ctx, g)
	url := c.waitEventListener(ctx)

	body := g.pushPayload()
	if code := post(t, url, body, "sha256=0000"); code != http.StatusAccepted {
		t.Errorf("push with a wrong signature: status %d, want 202 (the interceptor rejects it)", code)
	}
	c.noteChange("push to the GitOps repository", gitOpsPool)
	for range 2 { // a delivery and its redelivery
		if code := post(t, url, body, g.sign(body)); code != http.StatusAccepted {
			t.Fatalf("push: status %d, want 202", code)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for g.accepted.Load()+g.rejected.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the interceptor saw %d pushes after a minute, want 3\n%s", g.accepted.Load()+g.rejected.Load(), c.sinkLogs(ctx))
		}
		time.Sleep(time.Second)
	}
	if g.accepted.Load() != 2 || g.rejected.Load() != 1 {
		t.Errorf("interceptor accepted %d and rejected %d pushes, want 2 and 1", g.accepted.Load(), g.rejected.Load())
	}
	isGitOps := func(r *pipelinev1.PipelineRun) bool { return r.Labels[trigger.LabelTrigger] == trigger.TriggerGitOps }
	r := c.waitRun(ctx, gitOpsPool, isGitOps, 2*time.Minute)
	c.t.Logf("GitOps: run %s for the push of %s", r.Name, g.after)
	if r.Labels[trigger.LabelGitRevision] != g.after || r.Spec.PipelineRef == nil || r.Spec.PipelineRef.Name != "kiln-gitops-node-image" {
		t.Errorf("run %s: labels %v, pipeline %+v; want revision %s of kiln-gitops-node-image", r.Name, r.Labels, r.Spec.PipelineRef, g.after)
	}
	r = c.waitFinished(ctx, r, 20*time.Minute)
	c.settle()
	var gitops []string
	for _, pr := range c.listRuns(ctx, gitOpsPool) {
		if isGitOps(&pr) {
			gitops = append(gitops, pr.Name)
		}
	}
	if len(gitops) != 1 {
		t.Errorf("GitOps runs %v after a push, its redelivery and a forged push; want exactly one", gitops)
	}
	c.assertGitOpsImage(ctx, r)
	c.assertGitOpsHeldAtGate(ctx, r, before)
}

// assertGitOpsHeldAtGate: the cluster does not hold the pushed commit yet
// (no GitOps tool synced it here), so MCO would render the pool with the
// old NTP server under an image that carries the new one. The drift gate
// stops the rollout, names the MachineConfig and both values, and no node
// moves: kiln's MachineConfig still names the image the pool ran before.
func (c *cluster) assertGitOpsHeldAtGate(ctx context.Context, r *pipelinev1.PipelineRun, before string) {
	c.t.Helper()
	ro := c.taskRuns(ctx, r)["rollout"]
	if ro.tr == nil || ro.result("ROLLOUT_STATE") != rollout.StateDriftDetected || ro.result("DRIFT_GATE") != rollout.GateDrift {
		c.t.Fatalf("run %s: rollout results %v; want ROLLOUT_STATE=DriftDetected before the commit is synced\n%s", r.Name, ro.results, c.failedTasks(ctx, r))
	}
	logs := c.node.PodLogs(ctx, ro.tr.Namespace, ro.tr.Status.PodName)
	for _, want := range []string{"MachineConfig 50-worker-chrony", ntpAfter, ntpBefore} {
		if !strings.Contains(logs, want) {
			c.t.Errorf("rollout %s's drift diff lacks %q:\n%s", ro.tr.Name, want, logs)
		}
	}
	kilnMC := &mcfgv1.MachineConfig{}
	if err := c.c.Get(ctx, client.ObjectKey{Name: rollout.MachineConfigName(gitOpsPool)}, kilnMC); err != nil || kilnMC.Spec.OSImageURL != before {
		c.t.Errorf("kiln's MachineConfig after the held rollout: %v, osImageURL %q, want %s", err, kilnMC.Spec.OSImageURL, before)
	}
	c.assertDriftEvent(ctx, gitOpsPool)
}

// assertGitOpsImage: the run built the pushed commit: its image has the
// NTP server of the commit, not the cluster's; every task up to rollout
// succeeded, rollout failed (assertGitOpsHeldAtGate says why) and
// bootimages after it was skipped; Chains signed the image.
func (c *cluster) assertGitOpsImage(ctx context.Context, r *pipelinev1.PipelineRun) {
	c.t.Helper()
	ib := c.taskRuns(ctx, r)["image-build"]
	ref := ib.result("IMAGE_URL") + "@" + ib.result("IMAGE_DIGEST")
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		c.t.Fatalf("run %s: image %q: %v", r.Name, ref, err)
	}
	img, err := remote.Image(parsed, remote.WithContext(ctx))
	if err != nil {
		c.t.Fatalf("run %s: pulling %s: %v", r.Name, ref, err)
	}
	b, err := payload.ReadImageFile(img, "etc/chrony.conf")
	if err != nil || !strings.Contains(string(b), ntpAfter) || strings.Contains(string(b), ntpBefore) {
		c.t.Errorf("run %s: /etc/chrony.conf of %s is %q (%v), want the pushed commit's %s", r.Name, ref, b, err, ntpAfter)
	}
	c.assertTaskRunsFailing(ctx, r, []string{"fetch", "render", "image-build", "image-sign", "verify", "rollout", "report"}, "rollout")
	c.assertChains(ctx, r)
}

// serveGitOpsRepo makes the GitOps repository: the sample cluster under
// cluster/, then a commit changing 50-worker-chrony's NTP server; it is
// served over Git's dumb HTTP protocol on the host IP, where pods reach it.
func (c *cluster) serveGitOpsRepo() *gitOps {
	t := c.t
	root := t.TempDir()
	src := filepath.Join(root, "src")
	if err := os.CopyFS(filepath.Join(src, "cluster"), os.DirFS(c.manifest)); err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=kiln e2e", "-c", "user.email=e2e@kiln.dev"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	g := &gitOps{changed: "cluster/machineconfigs/50-worker-chrony.yaml"}
	git(root, "init", "-q", "-b", "main", src)
	git(src, "add", ".")
	git(src, "commit", "-qm", "cluster")
	g.before = git(src, "rev-parse", "HEAD")
	p := filepath.Join(src, g.changed)
	b, err := os.ReadFile(p)
	if err != nil || !bytes.Contains(b, []byte(ntpBefore)) {
		t.Fatalf("%s: %v, or no %s to change", p, err, ntpBefore)
	}
	if err := os.WriteFile(p, bytes.ReplaceAll(b, []byte(ntpBefore), []byte(ntpAfter)), 0o644); err != nil {
		t.Fatal(err)
	}
	git(src, "commit", "-qam", "worker: NTP server "+ntpAfter)
	g.after = git(src, "rev-parse", "HEAD")
	git(root, "clone", "-q", "--bare", src, filepath.Join(root, "serve", "gitops.git"))
	git(filepath.Join(root, "serve", "gitops.git"), "update-server-info")
	g.cloneURL = "http://" + c.serve(http.FileServer(http.Dir(filepath.Join(root, "serve"))), nil) + "/gitops.git"
	return g
}

// serve runs h on the host IP until the test ends and returns host:port;
// with TLS when cert is set.
func (c *cluster) serve(h http.Handler, cert *tls.Certificate) string {
	l, err := net.Listen("tcp", net.JoinHostPort(c.hostIP, "0"))
	if err != nil {
		c.t.Fatal(err)
	}
	if cert != nil {
		l = tls.NewListener(l, &tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	c.t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func (g *gitOps) sign(body []byte) string {
	m := hmac.New(sha256.New, g.secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// pushPayload is GitHub's push event, with the fields the sample's
// TriggerBinding reads (repository.clone_url, after).
func (g *gitOps) pushPayload() []byte {
	b, _ := json.Marshal(map[string]any{
		"ref": "refs/heads/main", "before": g.before, "after": g.after,
		"repository":  map[string]any{"full_name": "example/gitops", "clone_url": g.cloneURL, "default_branch": "main"},
		"head_commit": map[string]any{"id": g.after, "message": "worker: NTP server " + ntpAfter, "modified": []string{g.changed}},
		"commits":     []any{map[string]any{"id": g.after, "modified": []string{g.changed}}},
	})
	return b
}

func post(t *testing.T, url string, body []byte, signature string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("kiln-e2e-%d", time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", signature)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("posting to the EventListener %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// sinkLogs are the EventListener pods' logs, for failure messages.
func (c *cluster) sinkLogs(ctx context.Context) string {
	pods := &corev1.PodList{}
	if err := c.c.List(ctx, pods, client.InNamespace(kilnNS), client.MatchingLabels{"eventlistener": gitOpsListener}); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		b.WriteString(c.node.PodLogs(ctx, kilnNS, p.Name))
	}
	return b.String()
}

// waitEventListener waits for the sample EventListener's sink pod.
func (c *cluster) waitEventListener(ctx context.Context) string {
	c.t.Helper()
	var url string
	c.poll(ctx, 3*time.Minute, "EventListener "+gitOpsListener+"'s pod to be ready", func() bool {
		u, err := env.EventListenerURL(ctx, c.kube, kilnNS, gitOpsListener)
		url = u
		return err == nil
	})
	return url + "/"
}

// installGitOps applies config/samples' GitOps Pipeline and Triggers
// objects, patched only where this cluster differs from a real one (see
// patchGitOps), with the objects the samples say a user provides: the
// webhook Secret, the cosign public key ConfigMap, and the github
// ClusterInterceptor, here served by the test.
func (c *cluster) installGitOps(ctx context.Context, g *gitOps) {
	t := c.t
	c.create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kiln-gitops-webhook", Namespace: kilnNS},
		Data: map[string][]byte{"secret": g.secret}})
	pub, err := os.ReadFile(filepath.Join(c.keys.Cosign, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	c.create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kiln-cosign-pub", Namespace: kilnNS},
		Data: map[string]string{"cosign.pub": string(pub)}})
	c.githubInterceptor(ctx, g)
	var objs []*unstructured.Unstructured
	for _, f := range []string{"gitops/pipeline.yaml", "triggers/eventlistener.yaml", "triggers/triggerbinding.yaml", "triggers/triggertemplate.yaml"} {
		o, err := install.ReadObjects(filepath.Join(install.ConfigDir(), "samples", f))
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o...)
	}
	for _, o := range objs {
		if o.GetNamespace() == "" && o.GetKind() != "ClusterRoleBinding" {
			o.SetNamespace(kilnNS)
		}
		c.patchGitOps(o)
	}
	objs = append(objs, c.gitCloneTask())
	if err := install.Apply(ctx, c.c, objs); err != nil {
		t.Fatalf("applying the GitOps samples: %v", err)
	}
}
