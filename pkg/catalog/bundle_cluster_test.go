package catalog

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tektonv1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/apis/resolution/v1beta1"
	bundleresolver "github.com/tektoncd/pipeline/pkg/remoteresolution/resolver/bundle"
	"github.com/tektoncd/pipeline/pkg/resolution/common"
	"github.com/tektoncd/pipeline/pkg/resolution/resolver/bundle"
	"github.com/tektoncd/pipeline/pkg/resolution/resolver/framework"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubeclient "knative.dev/pkg/client/injection/kube/client"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

// TestBundlesResolveInCluster resolves every pushed bundle the way a
// cluster does: Tekton's bundles resolver (pkg/remoteresolution, what
// tekton-pipelines-resolvers runs) validates the request and resolves it
// with credentials taken by k8schain from a ServiceAccount's image pull
// Secret on a real kube-apiserver, from a registry with basic auth.
func TestBundlesResolveInCluster(t *testing.T) {
	ctx := context.Background()
	kube := env.StartKube(t)
	reg := env.StartRegistry(t, env.RegistryOptions{Users: map[string]string{"puller": "pull-pass"}})
	// k8schain also reads the process's Docker config: an empty one makes
	// the ServiceAccount's pull Secret the only source of credentials.
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	rs := loadRepo(t)
	authFile := filepath.Join(t.TempDir(), "config.json")
	pushAuth := base64.StdEncoding.EncodeToString([]byte("puller:pull-pass"))
	if err := os.WriteFile(authFile, []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, pushAuth)), 0o600); err != nil {
		t.Fatal(err)
	}
	pushed, err := PushBundles(ctx, registry.Remote{AuthFile: authFile}, reg.Host+"/kiln", rs)
	if err != nil {
		t.Fatal(err)
	}

	cs, err := kubernetes.NewForConfig(kube.Config)
	if err != nil {
		t.Fatal(err)
	}
	const ns = "kiln-catalog"
	auth := base64.StdEncoding.EncodeToString([]byte("puller:pull-pass"))
	for _, obj := range []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "registry-pull"},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, reg.Host, auth))},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
				ObjectMeta:       metav1.ObjectMeta{Name: "bundle-puller"},
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry-pull"}},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "no-secrets"}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := obj(); err != nil {
			t.Fatal(err)
		}
	}

	ctx = context.WithValue(ctx, kubeclient.Key{}, kubernetes.Interface(cs))
	ctx = framework.InjectResolverConfigToContext(ctx, map[string]string{
		bundle.ConfigServiceAccount: "bundle-puller",
		bundle.ConfigKind:           "task",
	})
	ctx = common.InjectRequestNamespace(ctx, ns)
	var resolver bundleresolver.Resolver
	if err := resolver.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	resolve := func(params map[string]string) ([]byte, error) {
		req := &v1beta1.ResolutionRequestSpec{}
		for k, v := range params {
			req.Params = append(req.Params, tektonv1.Param{Name: k, Value: *tektonv1.NewStructuredValues(v)})
		}
		if err := resolver.Validate(ctx, req); err != nil {
			return nil, err
		}
		res, err := resolver.Resolve(ctx, req)
		if err != nil {
			return nil, err
		}
		return res.Data(), nil
	}

	for _, p := range pushed {
		r := p.Resource
		t.Run(string(r.Kind)+"/"+r.Name, func(t *testing.T) {
			data, err := resolve(map[string]string{"bundle": p.Ref, "name": r.Name, "kind": string(r.Kind)})
			if err != nil {
				t.Fatalf("resolving %s from %s: %v", r.Name, p.Ref, err)
			}
			if !bytes.Equal(data, r.Raw) {
				t.Errorf("resolved bytes differ from %s", r.Source)
			}
			sameResource(t, r, data)
		})
	}

	task := pushed[0]
	cases := []struct {
		name   string
		params map[string]string
		want   string
	}{
		{"kind from the resolver's default", map[string]string{"bundle": task.Ref, "name": task.Resource.Name}, ""},
		{"unknown name", map[string]string{"bundle": task.Ref, "name": "kiln-nope", "kind": "task"},
			"could not find object in image with kind: task and name: kiln-nope"},
		{"no bundle", map[string]string{"name": "kiln-render"}, `parameter "bundle" required`},
		{"ServiceAccount without the pull Secret", map[string]string{"bundle": task.Ref, "name": task.Resource.Name, "serviceAccount": "no-secrets"},
			"UNAUTHORIZED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := resolve(c.params)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
