package trigger

import (
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
)

// ClusterRun is what cluster mode adds to every run from the cluster
// itself rather than from kiln-config: the registries folder and the
// cluster pull secret as workspaces, and the cluster proxy as env. None of
// it is a fingerprint input: a rotated pull secret, a new mirror set or a
// new proxy rebuilds nothing, the next run simply gets it.
//
// kiln-config wins every conflict: a workspace it binds by the same name
// is kept as it is (so a registry-auth Secret set there replaces the
// cluster pull secret, and must then hold the pull secret's credentials
// too), and an env variable its podTemplate sets is kept (either case of
// a proxy variable counts as setting both).
type ClusterRun struct {
	Workspaces []pipelinev1.WorkspaceBinding
	Env        []corev1.EnvVar
}

// apply adds r to pr, after kiln-config's settings are in place.
func (r ClusterRun) apply(pr *pipelinev1.PipelineRun) {
	bound := map[string]bool{}
	for _, w := range pr.Spec.Workspaces {
		bound[w.Name] = true
	}
	for _, w := range r.Workspaces {
		if !bound[w.Name] {
			pr.Spec.Workspaces = append(pr.Spec.Workspaces, *w.DeepCopy())
		}
	}
	if len(r.Env) == 0 {
		return
	}
	if pr.Spec.TaskRunTemplate.PodTemplate == nil {
		pr.Spec.TaskRunTemplate.PodTemplate = &pod.Template{}
	}
	t := pr.Spec.TaskRunTemplate.PodTemplate
	t.Env = mergeEnv(t.Env, r.Env)
}

// mergeEnv appends the variables of add that set does not name. Names are
// compared without case: HTTP_PROXY and http_proxy are one setting, and a
// user who sets one of them would not expect the cluster's value in the
// other (curl reads only the lower-case http_proxy, Go the upper-case
// first).
func mergeEnv(set, add []corev1.EnvVar) []corev1.EnvVar {
	user := map[string]bool{}
	for _, e := range set {
		user[strings.ToUpper(e.Name)] = true
	}
	out := append([]corev1.EnvVar(nil), set...)
	for _, e := range add {
		if !user[strings.ToUpper(e.Name)] {
			out = append(out, e)
		}
	}
	return out
}

// clusterConfigName names the cluster's one Proxy and one Image config.
const clusterConfigName = "cluster"

// proxyEnv is the env a Task's pod needs behind the cluster proxy. Like
// MCO (ControllerConfig.spec.proxy, rendered into /etc/mco/proxy.env), it
// reads the Proxy's status, which the cluster network operator fills in
// from the spec once validated, with noProxy completed by the cluster's
// own networks, service domain and API hosts; the spec alone would send
// in-cluster traffic to the proxy. An empty field sets nothing. Unlike
// MCO's file, the lower-case forms are set too: curl and other libcurl
// users ignore upper-case HTTP_PROXY.
func proxyEnv(p *configv1.Proxy) []corev1.EnvVar {
	if p == nil {
		return nil
	}
	var out []corev1.EnvVar
	for _, v := range []struct{ name, value string }{
		{"HTTP_PROXY", p.Status.HTTPProxy},
		{"HTTPS_PROXY", p.Status.HTTPSProxy},
		{"NO_PROXY", p.Status.NoProxy},
	} {
		if v.value == "" {
			continue
		}
		out = append(out, corev1.EnvVar{Name: v.name, Value: v.value}, corev1.EnvVar{Name: strings.ToLower(v.name), Value: v.value})
	}
	return out
}
