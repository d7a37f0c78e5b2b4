package localrun

import (
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// TestLoadClusterInputs gathers the registry objects of a manifests folder:
// mirror sets alone and in typed lists, the image and proxy config, and
// only the ConfigMap the image config names.
func TestLoadClusterInputs(t *testing.T) {
	dir := writeManifests(t, map[string]string{
		"mirrors.yaml": `apiVersion: config.openshift.io/v1
kind: ImageDigestMirrorSetList
items:
- apiVersion: config.openshift.io/v1
  kind: ImageDigestMirrorSet
  metadata: {name: a}
  spec: {imageDigestMirrors: [{source: quay.io/a, mirrors: [m.example.com/a]}]}
- apiVersion: config.openshift.io/v1
  kind: ImageDigestMirrorSet
  metadata: {name: b}
  spec: {imageDigestMirrors: [{source: quay.io/b, mirrors: [m.example.com/b]}]}
---
apiVersion: config.openshift.io/v1
kind: ImageTagMirrorSet
metadata: {name: t}
spec: {imageTagMirrors: [{source: quay.io/t, mirrors: [m.example.com/t]}]}
---
apiVersion: operator.openshift.io/v1alpha1
kind: ImageContentSourcePolicy
metadata: {name: old}
spec: {repositoryDigestMirrors: [{source: quay.io/o, mirrors: [m.example.com/o]}]}
`,
		"cluster/image.yaml": `apiVersion: config.openshift.io/v1
kind: Image
metadata: {name: cluster}
spec: {additionalTrustedCA: {name: cas}, registrySources: {insecureRegistries: [insecure.example.com]}}
---
apiVersion: config.openshift.io/v1
kind: Proxy
metadata: {name: cluster}
spec: {httpsProxy: "http://proxy.example.com:3128", noProxy: .cluster.local}
`,
		"cluster/cas.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: cas, namespace: openshift-config}
data: {m.example.com: "x"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: other, namespace: openshift-config}
data: {a: b}
`,
	})
	in, err := loadClusterInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(in.IDMS) != 2 || in.IDMS[1].Name != "b" || len(in.ITMS) != 1 || len(in.ICSP) != 1 || in.ICSP[0].Spec.RepositoryDigestMirrors[0].Source != "quay.io/o":
		t.Fatalf("mirror sets: IDMS %d ITMS %d ICSP %d", len(in.IDMS), len(in.ITMS), len(in.ICSP))
	case in.Image == nil || in.Image.Spec.RegistrySources.InsecureRegistries[0] != "insecure.example.com":
		t.Fatalf("image config %+v", in.Image)
	case in.Proxy == nil || in.Proxy.Spec.HTTPSProxy != "http://proxy.example.com:3128":
		t.Fatalf("proxy %+v", in.Proxy)
	case in.TrustedCA == nil || in.TrustedCA.Name != "cas":
		t.Fatalf("trusted CA %+v", in.TrustedCA)
	}
	// The ConfigMap's value is not a certificate: FromCluster says so.
	if _, err := registry.FromCluster(in); err == nil || !strings.Contains(err.Error(), "ConfigMap openshift-config/cas: data[m.example.com]: no PEM certificate") {
		t.Fatalf("error %v", err)
	}
}

func TestLoadClusterInputsRefuses(t *testing.T) {
	cases := []struct {
		name, manifest, want string
	}{
		{"misspelt field", "apiVersion: config.openshift.io/v1\nkind: ImageDigestMirrorSet\nmetadata: {name: a}\nspec: {imageDigestMirrors: [{source: quay.io/a, mirror: [m.example.com/a]}]}\n",
			`ImageDigestMirrorSet a: strict decoding error: unknown field "spec.imageDigestMirrors[0].mirror"`},
		{"misspelt ICSP field", "apiVersion: operator.openshift.io/v1alpha1\nkind: ImageContentSourcePolicy\nmetadata: {name: o}\nspec: {repositoryDigestMirror: []}\n",
			`ImageContentSourcePolicy o: strict decoding error: unknown field "spec.repositoryDigestMirror"`},
		{"image config not named cluster", "apiVersion: config.openshift.io/v1\nkind: Image\nmetadata: {name: images}\nspec: {}\n",
			`Image images: metadata.name: must be "cluster", the only Image OpenShift reads`},
		{"two proxies", "apiVersion: config.openshift.io/v1\nkind: Proxy\nmetadata: {name: cluster}\nspec: {}\n---\napiVersion: config.openshift.io/v1\nkind: Proxy\nmetadata: {name: cluster}\nspec: {}\n",
			`m.yaml: document 2: Proxy cluster: duplicate: also defined in`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeManifests(t, map[string]string{"m.yaml": c.manifest})
			_, err := loadClusterInputs(dir)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, dir, c.want)
			}
		})
	}
}
