package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// twoContexts is a kubeconfig whose current-context is the first of two
// clusters.
const twoContexts = `apiVersion: v1
kind: Config
current-context: first
clusters:
- name: one
  cluster: {server: "https://one.example:6443"}
- name: two
  cluster: {server: "https://two.example:6443"}
users:
- name: u
  user: {token: not-a-secret}
contexts:
- name: first
  context: {cluster: one, user: u}
- name: second
  context: {cluster: two, user: u, namespace: kiln}
`

// --context picks a context of the kubeconfig: the resolved config's
// host is that context's cluster; no --context means current-context;
// an unknown context is an error naming it.
func TestLoadRESTConfigContextPicksItsCluster(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		context  string
		wantHost string
		wantErr  string
	}{
		{"", "https://one.example:6443", ""},
		{"second", "https://two.example:6443", ""},
		{"first", "https://one.example:6443", ""},
		{"third", "", `context "third"`},
	}
	for _, c := range cases {
		t.Run(c.context, func(t *testing.T) {
			cfg, err := RESTConfig(&KubeOptions{Kubeconfig: path, Context: c.context})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.wantHost, cfg.Host); diff != "" {
				t.Errorf("host (-want +got):\n%s", diff)
			}
		})
	}
}

// Without --kubeconfig, --context is looked up in $KUBECONFIG (not the
// in-cluster config, which has no contexts).
func TestLoadRESTConfigContextFromKUBECONFIG(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", path)
	cfg, err := LoadRESTConfig("", "second")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("https://two.example:6443", cfg.Host); diff != "" {
		t.Errorf("host (-want +got):\n%s", diff)
	}
}
