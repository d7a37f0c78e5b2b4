package trigger

import (
	"context"
	"slices"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

func TestProxyEnvComesFromStatus(t *testing.T) {
	both := func(name, v string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: name, Value: v}, {Name: map[string]string{"HTTP_PROXY": "http_proxy", "HTTPS_PROXY": "https_proxy", "NO_PROXY": "no_proxy"}[name], Value: v}}
	}
	cases := []struct {
		name  string
		proxy *configv1.Proxy
		want  []corev1.EnvVar
	}{
		{"no Proxy object, no env", nil, nil},
		{"a spec the network operator has not accepted yet sets nothing", &configv1.Proxy{Spec: configv1.ProxySpec{HTTPProxy: "http://p:3128"}}, nil},
		{"every status field, both cases", &configv1.Proxy{
			Spec:   configv1.ProxySpec{HTTPProxy: "http://spec:1", NoProxy: "spec.example"},
			Status: configv1.ProxyStatus{HTTPProxy: "http://p:3128", HTTPSProxy: "http://p:3129", NoProxy: ".cluster.local,.svc,10.0.0.0/16"},
		}, slices.Concat(both("HTTP_PROXY", "http://p:3128"), both("HTTPS_PROXY", "http://p:3129"), both("NO_PROXY", ".cluster.local,.svc,10.0.0.0/16"))},
		{"an empty field is left out", &configv1.Proxy{Status: configv1.ProxyStatus{HTTPSProxy: "http://p:3129"}}, both("HTTPS_PROXY", "http://p:3129")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := proxyEnv(c.proxy); !slices.Equal(got, c.want) {
				t.Fatalf("proxyEnv = %v, want %v", got, c.want)
			}
		})
	}
}

// kiln-config's bindings and env win over the cluster's; the rest of the
// cluster's is added, and kiln-config's parsed template is not touched.
func TestClusterRunKilnConfigWins(t *testing.T) {
	userAuth := pipelinev1.WorkspaceBinding{Name: WorkspaceRegistryAuth, Secret: &corev1.SecretVolumeSource{SecretName: "my-push-auth"}}
	work := pipelinev1.WorkspaceBinding{Name: "work", EmptyDir: &corev1.EmptyDirVolumeSource{}}
	clusterAuth := pipelinev1.WorkspaceBinding{Name: WorkspaceRegistryAuth, Secret: &corev1.SecretVolumeSource{SecretName: PullSecretCopy}}
	regs := pipelinev1.WorkspaceBinding{Name: WorkspaceRegistries, ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: RegistriesConfigMap}}}
	cluster := ClusterRun{
		Workspaces: []pipelinev1.WorkspaceBinding{regs, clusterAuth},
		Env:        proxyEnv(&configv1.Proxy{Status: configv1.ProxyStatus{HTTPProxy: "http://cluster:3128", HTTPSProxy: "http://cluster:3129"}}),
	}
	cases := []struct {
		name       string
		workspaces []pipelinev1.WorkspaceBinding
		template   *pod.Template
		cluster    ClusterRun
		wantWS     []pipelinev1.WorkspaceBinding
		wantEnv    []corev1.EnvVar // nil: no pod template at all
	}{
		{
			name: "nothing from the cluster changes nothing", workspaces: []pipelinev1.WorkspaceBinding{work},
			wantWS: []pipelinev1.WorkspaceBinding{work},
		},
		{
			name: "the cluster's bindings and proxy are added", workspaces: []pipelinev1.WorkspaceBinding{work}, cluster: cluster,
			wantWS: []pipelinev1.WorkspaceBinding{work, regs, clusterAuth},
			wantEnv: []corev1.EnvVar{
				{Name: "HTTP_PROXY", Value: "http://cluster:3128"}, {Name: "http_proxy", Value: "http://cluster:3128"},
				{Name: "HTTPS_PROXY", Value: "http://cluster:3129"}, {Name: "https_proxy", Value: "http://cluster:3129"},
			},
		},
		{
			name: "kiln-config's registry-auth and proxy variable win, in either case", cluster: cluster,
			workspaces: []pipelinev1.WorkspaceBinding{work, userAuth},
			template:   &pod.Template{NodeSelector: map[string]string{"a": "b"}, Env: []corev1.EnvVar{{Name: "http_proxy", Value: "http://mine:8080"}, {Name: "KILN_INSECURE_REGISTRY", Value: "r:5000"}}},
			wantWS:     []pipelinev1.WorkspaceBinding{work, userAuth, regs},
			wantEnv: []corev1.EnvVar{
				{Name: "http_proxy", Value: "http://mine:8080"}, {Name: "KILN_INSECURE_REGISTRY", Value: "r:5000"},
				{Name: "HTTPS_PROXY", Value: "http://cluster:3129"}, {Name: "https_proxy", Value: "http://cluster:3129"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Repository: "r/{pool}", Pipeline: "kiln-node-image", Workspaces: c.workspaces, PodTemplate: c.template, Cluster: c.cluster}
			var before []corev1.EnvVar
			if c.template != nil {
				before = slices.Clone(c.template.Env)
			}
			fp, _ := (&SpecHasher{}).Compute(Inputs{BaseImage: "b", PipelineVersion: "0.1"})
			pr := BuildRun(cfg, RunSpec{Namespace: "kiln", Pool: "worker", Fingerprint: fp, Trigger: TriggerManual})
			if err := validateRun(context.Background(), pr); err != nil {
				t.Fatal(err)
			}
			if len(pr.Spec.Workspaces) != len(c.wantWS) {
				t.Fatalf("workspaces %+v, want %+v", pr.Spec.Workspaces, c.wantWS)
			}
			for i, w := range c.wantWS {
				if got := pr.Spec.Workspaces[i]; !equality.Semantic.DeepEqual(got, w) {
					t.Errorf("workspace %d = %+v, want %+v", i, got, w)
				}
			}
			tpl := pr.Spec.TaskRunTemplate.PodTemplate
			switch {
			case c.wantEnv == nil && tpl != nil:
				t.Fatalf("pod template %+v, want none", tpl)
			case c.wantEnv != nil && (tpl == nil || !slices.Equal(tpl.Env, c.wantEnv)):
				t.Fatalf("pod template %+v, want env %v", tpl, c.wantEnv)
			}
			if c.template != nil {
				if !slices.Equal(c.template.Env, before) {
					t.Errorf("kiln-config's template changed: %v", c.template.Env)
				}
				if tpl.NodeSelector["a"] != "b" {
					t.Errorf("kiln-config's nodeSelector lost: %+v", tpl)
				}
			}
		})
	}
}
