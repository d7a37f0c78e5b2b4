package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/test/env"
)

// patchGitOps adapts a GitOps sample object to this cluster, and only
// where the cluster differs from a real one:
//   - fetch: the catalog's git-clone comes through the hub resolver, which
//     needs the internet; a local Task of the same interface stands in;
//   - the EventListener's pod and the runs' pods reach the apiserver on the
//     host IP (no kube-proxy here), the runs also the plain-HTTP registry;
//   - the runs' image and volumes: the local kiln-steps image, the test
//     registry's repository, the test's storage class and sizes.
func (c *cluster) patchGitOps(o *unstructured.Unstructured) {
	switch o.GetKind() {
	case "Pipeline":
		tasks, _, _ := unstructured.NestedSlice(o.Object, "spec", "tasks")
		fetch := tasks[0].(map[string]any)
		fetch["taskRef"] = map[string]any{"name": "git-clone", "kind": "Task"}
		c.set(o, tasks, "spec", "tasks")
	case "EventListener":
		c.set(o, []any{map[string]any{"env": c.envList(c.apiserverEnv())}},
			"spec", "resources", "kubernetesResource", "spec", "template", "spec", "containers")
	case "TriggerTemplate":
		c.patchTriggerTemplate(o)
	}
}

func (c *cluster) patchTriggerTemplate(o *unstructured.Unstructured) {
	params, _, _ := unstructured.NestedSlice(o.Object, "spec", "params")
	for _, p := range params {
		if m := p.(map[string]any); m["name"] == "repository" {
			m["default"] = c.reg.Host + "/kiln/gitops-" + gitOpsPool
		}
	}
	c.set(o, params, "spec", "params")
	rts, _, _ := unstructured.NestedSlice(o.Object, "spec", "resourcetemplates")
	run := &unstructured.Unstructured{Object: rts[0].(map[string]any)}
	runParams, _, _ := unstructured.NestedSlice(run.Object, "spec", "params")
	runParams = append(runParams, map[string]any{"name": "kiln-image", "value": c.steps},
		map[string]any{"name": "rollout-timeout", "value": "10m"})
	c.set(run, runParams, "spec", "params")
	podEnv := c.apiserverEnv()
	podEnv["KILN_INSECURE_REGISTRY"] = c.reg.Host
	c.set(run, c.envList(podEnv), "spec", "taskRunTemplate", "podTemplate", "env")
	wss, _, _ := unstructured.NestedSlice(run.Object, "spec", "workspaces")
	for _, ws := range wss {
		w := &unstructured.Unstructured{Object: ws.(map[string]any)}
		if _, ok, _ := unstructured.NestedMap(w.Object, "volumeClaimTemplate"); ok {
			c.set(w, storageClass, "volumeClaimTemplate", "spec", "storageClassName")
			c.set(w, "1Gi", "volumeClaimTemplate", "spec", "resources", "requests", "storage")
		}
	}
	c.set(run, wss, "spec", "workspaces")
	rts[0] = run.Object
	c.set(o, rts, "spec", "resourcetemplates")
}

func (c *cluster) set(o *unstructured.Unstructured, v any, fields ...string) {
	c.t.Helper()
	if err := unstructured.SetNestedField(o.Object, v, fields...); err != nil {
		c.t.Fatalf("patching %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

func (c *cluster) envList(vars map[string]string) []any {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]any, 0, len(keys))
	for _, k := range keys {
		out = append(out, map[string]any{"name": k, "value": vars[k]})
	}
	return out
}

// gitCloneTask stands in for the catalog's git-clone 0.9 with the part of
// its interface the sample uses: params url, revision and deleteExisting,
// workspace output, results commit and url. It runs git from the e2e's
// steps image.
func (c *cluster) gitCloneTask() *unstructured.Unstructured {
	script := `#!/bin/sh
set -eu
cd "$(workspaces.output.path)"
if [ "$(params.deleteExisting)" = true ]; then find . -mindepth 1 -maxdepth 1 -exec rm -rf {} +; fi
git clone -q "$(params.url)" .
git -c advice.detachedHead=false checkout -q "$(params.revision)"
printf %s "$(git rev-parse HEAD)" >"$(results.commit.path)"
printf %s "$(params.url)" >"$(results.url.path)"
`
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tekton.dev/v1", "kind": "Task",
		"metadata": map[string]any{"name": "git-clone", "namespace": kilnNS},
		"spec": map[string]any{
			"params": []any{map[string]any{"name": "url"}, map[string]any{"name": "revision", "default": "main"},
				map[string]any{"name": "deleteExisting", "default": "true"}},
			"workspaces": []any{map[string]any{"name": "output"}},
			"results":    []any{map[string]any{"name": "commit"}, map[string]any{"name": "url"}},
			"steps":      []any{map[string]any{"name": "clone", "image": c.steps, "script": script}},
		},
	}}
}

// interceptorRequest and interceptorResponse are the parts of Tekton
// Triggers' interceptor protocol (triggers.tekton.dev/v1beta1
// InterceptorRequest/Response) the github interceptor uses.
type interceptorRequest struct {
	Body   string              `json:"body"`
	Header map[string][]string `json:"header"`
	Params struct {
		SecretRef struct {
			SecretName string `json:"secretName"`
			SecretKey  string `json:"secretKey"`
		} `json:"secretRef"`
		EventTypes []string `json:"eventTypes"`
	} `json:"interceptor_params"`
}

type interceptorResponse struct {
	Continue bool `json:"continue"`
	Status   struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"status"`
}

// githubInterceptor serves ClusterInterceptor github over TLS on the host
// IP, with its CA as the caBundle the sink requires, and checks what
// Triggers' own github interceptor checks: the event type against
// eventTypes and X-Hub-Signature-256 against the secretRef's Secret.
func (c *cluster) githubInterceptor(ctx context.Context, g *gitOps) {
	certPEM, keyPEM, err := env.SelfSigned(c.hostIP)
	if err != nil {
		c.t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		c.t.Fatal(err)
	}
	addr := c.serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req interceptorRequest
		var resp interceptorResponse
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if msg := c.checkPush(ctx, req); msg != "" {
			g.rejected.Add(1)
			resp.Status.Code, resp.Status.Message = 9, msg // FailedPrecondition
		} else {
			g.accepted.Add(1)
			resp.Continue = true
		}
		_ = json.NewEncoder(w).Encode(resp)
	}), &cert)
	ci := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "triggers.tekton.dev/v1alpha1", "kind": "ClusterInterceptor",
		"metadata": map[string]any{"name": "github", "labels": map[string]any{"server/type": "https"}},
		"spec":     map[string]any{"clientConfig": map[string]any{"url": "https://" + addr + "/github", "caBundle": base64.StdEncoding.EncodeToString(certPEM)}},
	}}
	if err := c.c.Create(ctx, ci); err != nil {
		c.t.Fatalf("creating ClusterInterceptor github: %v", err)
	}
}

// checkPush returns why the request is refused, or "".
func (c *cluster) checkPush(ctx context.Context, req interceptorRequest) string {
	h := http.Header(req.Header)
	if event := h.Get("X-GitHub-Event"); !slices.Contains(req.Params.EventTypes, event) {
		return "event type " + event + " is not allowed"
	}
	s := &corev1.Secret{}
	ref := req.Params.SecretRef
	if err := c.c.Get(ctx, client.ObjectKey{Namespace: kilnNS, Name: ref.SecretName}, s); err != nil {
		return err.Error()
	}
	want := (&gitOps{secret: s.Data[ref.SecretKey]}).sign([]byte(req.Body))
	if !hmac.Equal([]byte(h.Get("X-Hub-Signature-256")), []byte(want)) {
		return "X-Hub-Signature-256 does not match the payload"
	}
	return ""
}
