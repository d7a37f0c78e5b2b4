package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/release"
	"github.com/kiln-dev/kiln/test/env"
)

// ConfigDir is config/ of this checkout.
func ConfigDir() string { return filepath.Join(env.RepoRoot(), "config") }

// Render builds the kustomization in dir as `make install` does
// (pkg/release.Render: kubectl's defaults, no plugins, loads restricted to
// each kustomization's root, so ../tasks and ../pipelines must be
// kustomizations of their own) and returns the objects in kustomize's
// output order.
func Render(dir string) ([]*unstructured.Unstructured, error) {
	return release.Render(dir)
}

// Select returns the objects of the given kinds.
func Select(objs []*unstructured.Unstructured, kinds ...string) []*unstructured.Unstructured {
	want := map[string]bool{}
	for _, k := range kinds {
		want[k] = true
	}
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if want[o.GetKind()] {
			out = append(out, o)
		}
	}
	return out
}

// applyOrder puts namespaces first, then CRDs, so that everything after
// them has its namespace and its kind.
var applyOrder = map[string]int{"Namespace": 0, "CustomResourceDefinition": 1}

// Apply creates objs with c (an admin client), namespaces and CRDs first;
// an object that exists already is updated to the rendered one.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	sorted := append([]*unstructured.Unstructured(nil), objs...)
	rank := func(o *unstructured.Unstructured) int {
		if r, ok := applyOrder[o.GetKind()]; ok {
			return r
		}
		return 2
	}
	sort.SliceStable(sorted, func(i, j int) bool { return rank(sorted[i]) < rank(sorted[j]) })
	for _, o := range sorted {
		o = o.DeepCopy()
		err := c.Create(ctx, o)
		if apierrors.IsAlreadyExists(err) {
			cur := &unstructured.Unstructured{}
			cur.SetGroupVersionKind(o.GroupVersionKind())
			if err = c.Get(ctx, client.ObjectKeyFromObject(o), cur); err == nil {
				o.SetResourceVersion(cur.GetResourceVersion())
				err = c.Update(ctx, o)
			}
		}
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// ReadObjects decodes a multi-document YAML file, such as a sample under
// config/samples, strictly (duplicate keys fail) into unstructured objects
// with apiVersion, kind and name.
func ReadObjects(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		m := map[string]any{}
		if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
			return nil, fmt.Errorf("%s document %d: %w", path, i, err)
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("%s document %d: apiVersion, kind and metadata.name are required", path, i)
		}
		out = append(out, u)
	}
	return out, nil
}
