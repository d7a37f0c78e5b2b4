package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
	"github.com/kiln-dev/kiln/pkg/manifests"
	"github.com/kiln-dev/kiln/pkg/safepath"
)

// objectKey identifies an object across versions.
type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

// loaded is what a folder holds: its objects, the kinds outside the
// scheme in the order first seen, and each object's resourceVersion as
// written in its manifest.
type loaded struct {
	objs     []client.Object
	gvks     []schema.GroupVersionKind
	scopes   map[schema.GroupVersionKind]meta.RESTScope
	sourceRV map[objectKey]string
}

func (f *Folder) load(scheme *runtime.Scheme) (*loaded, error) {
	l := &loaded{scopes: map[schema.GroupVersionKind]meta.RESTScope{}, sourceRV: map[objectKey]string{}}
	err := manifests.Walk(f.Dir, func(obj runtime.Object) error {
		o, ok := obj.(client.Object)
		if !ok {
			return nil
		}
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil // not a kind a stage reads
		}
		if _, isU := obj.(*unstructured.Unstructured); isU {
			if !slices.Contains(f.Groups, gvk.Group) {
				return nil
			}
			l.addKind(gvk, o.GetNamespace() != "")
		}
		l.sourceRV[objectKey{gvk.GroupKind(), o.GetNamespace(), o.GetName()}] = o.GetResourceVersion()
		l.objs = append(l.objs, o)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, k := range f.Kinds {
		if !l.hasKind(k.GroupKind()) {
			l.addKind(k, true)
		}
	}
	return l, nil
}

func (l *loaded) addKind(gvk schema.GroupVersionKind, namespaced bool) {
	if _, ok := l.scopes[gvk]; ok {
		return
	}
	l.gvks = append(l.gvks, gvk)
	l.scopes[gvk] = meta.RESTScopeRoot
	if namespaced {
		l.scopes[gvk] = meta.RESTScopeNamespace
	}
}

func (l *loaded) hasKind(gk schema.GroupKind) bool {
	for _, g := range l.gvks {
		if g.GroupKind() == gk {
			return true
		}
	}
	return false
}

// mapper maps the kinds outside the scheme, so that a stage can resolve
// them as it does on the apiserver; versions are preferred in the order
// the folder holds them.
func (l *loaded) mapper() meta.RESTMapper {
	var gvs []schema.GroupVersion
	for _, g := range l.gvks {
		if !slices.Contains(gvs, g.GroupVersion()) {
			gvs = append(gvs, g.GroupVersion())
		}
	}
	m := meta.NewDefaultRESTMapper(gvs)
	for _, g := range l.gvks {
		m.Add(g, l.scopes[g])
	}
	return m
}

func (f *Folder) open() (client.WithWatch, error) {
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	l, err := f.load(scheme)
	if err != nil {
		return nil, err
	}
	w := &writer{folder: f, scheme: scheme, sourceRV: l.sourceRV}
	b := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(l.mapper()).
		WithObjects(l.objs...).WithStatusSubresource(f.StatusSubresource...).
		WithInterceptorFuncs(w.funcs())
	return f.build(b)
}

// build turns the fake client's panic on an object it cannot hold into an
// error naming the folder.
func (f *Folder) build(b *fake.ClientBuilder) (c client.WithWatch, err error) {
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("loading the manifests of %s: %v", f.Dir, r)
		}
	}()
	return b.Build(), nil
}

// writer writes every change the fake client accepts under Output.
type writer struct {
	folder   *Folder
	scheme   *runtime.Scheme
	sourceRV map[objectKey]string
}

func (w *writer) funcs() interceptor.Funcs {
	return interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			w.unversion(obj)
			return nil
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if err := c.List(ctx, list, opts...); err != nil {
				return err
			}
			return meta.EachListItem(list, func(o runtime.Object) error {
				if obj, ok := o.(client.Object); ok {
					w.unversion(obj)
				}
				return nil
			})
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if w.reversion(ctx, c, obj) {
				// The stage read this manifest without a version and saves
				// it back as new: the folder's object is replaced.
				return w.change(ctx, c, obj, func() error { return c.Update(ctx, obj) })
			}
			return w.change(ctx, c, obj, func() error { return c.Create(ctx, obj, opts...) })
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.reversion(ctx, c, obj)
			return w.change(ctx, c, obj, func() error { return c.Update(ctx, obj, opts...) })
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			p, err := w.repatch(ctx, c, obj, p)
			if err != nil {
				return err
			}
			return w.change(ctx, c, obj, func() error { return c.Patch(ctx, obj, p, opts...) })
		},
		Delete: w.delete,
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			w.reversion(ctx, c, obj)
			return w.change(ctx, c, obj, func() error { return c.SubResource(sub).Update(ctx, obj, opts...) })
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			p, err := w.repatch(ctx, c, obj, p)
			if err != nil {
				return err
			}
			return w.change(ctx, c, obj, func() error { return c.SubResource(sub).Patch(ctx, obj, p, opts...) })
		},
		// A folder has no way to express these; refusing them keeps a
		// stage from believing a change was recorded.
		DeleteAllOf: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteAllOfOption) error {
			return fmt.Errorf("deleting all %T: not supported on a folder of manifests", obj)
		},
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return fmt.Errorf("server-side apply: not supported on a folder of manifests")
		},
		SubResourceCreate: func(_ context.Context, _ client.Client, sub string, obj client.Object, _ client.Object, _ ...client.SubResourceCreateOption) error {
			return fmt.Errorf("creating subresource %s of %s: not supported on a folder of manifests", sub, obj.GetName())
		},
	}
}

// unversioned is the resourceVersion the fake client gives an object
// added without one (its trackerAddResourceVersion); every write raises it.
const unversioned = "999"

// unversion shows an object as a manifest has it: with its apiVersion and
// kind (the fake client clears them on typed objects; the apiserver's
// client and the manifest reader keep them), and, when it was loaded
// without a resourceVersion and not written since, with none, as folder
// mode always read it (a stage records or derives numbers from it).
func (w *writer) unversion(obj client.Object) {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if obj.GetResourceVersion() != unversioned {
		return
	}
	if rv, ok := w.sourceRV[objectKey{gvk.GroupKind(), obj.GetNamespace(), obj.GetName()}]; ok && rv == "" {
		obj.SetResourceVersion("")
	}
}

// reversion is unversion's inverse for a write: an object read without a
// version carries the one the fake client holds, so that writing back what
// was read is not a conflict (folder mode has one writer). It reports
// whether obj is such an object.
func (w *writer) reversion(ctx context.Context, c client.Reader, obj client.Object) bool {
	if obj.GetResourceVersion() != "" {
		return false
	}
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return false
	}
	if rv, ok := w.sourceRV[objectKey{gvk.GroupKind(), obj.GetNamespace(), obj.GetName()}]; !ok || rv != "" {
		return false
	}
	cur, ok := obj.DeepCopyObject().(client.Object)
	if !ok || c.Get(ctx, client.ObjectKeyFromObject(obj), cur) != nil || cur.GetResourceVersion() != unversioned {
		return false
	}
	obj.SetResourceVersion(unversioned)
	return true
}

// repatch does reversion's work for a merge patch that carries the empty
// resourceVersion the stage read (optimistic concurrency on an object
// loaded without one).
func (w *writer) repatch(ctx context.Context, c client.Reader, obj client.Object, p client.Patch) (client.Patch, error) {
	if p.Type() != types.MergePatchType && p.Type() != types.StrategicMergePatchType {
		return p, nil
	}
	data, err := p.Data(obj)
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return p, nil // the fake client reports a malformed patch
	}
	md, _ := doc["metadata"].(map[string]any)
	if rv, set := md["resourceVersion"]; !set || rv != "" {
		return p, nil
	}
	probe, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return p, nil
	}
	probe.SetResourceVersion("")
	if !w.reversion(ctx, c, probe) {
		return p, nil
	}
	md["resourceVersion"] = unversioned
	if data, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	return client.RawPatch(p.Type(), data), nil
}

// change runs op and writes the object as the fake client then holds it.
// The output path is checked first, so an object whose file would be
// refused is not changed either.
func (w *writer) change(ctx context.Context, c client.Reader, obj client.Object, op func() error) error {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return err
	}
	rel, err := w.path(gvk, obj.GetNamespace(), obj.GetName(), false)
	if err != nil {
		return err
	}
	if err := op(); err != nil {
		return err
	}
	stored, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("writing %s: %T is not an object", rel, obj)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
		return fmt.Errorf("writing %s: %w", rel, err)
	}
	stored.GetObjectKind().SetGroupVersionKind(gvk)
	// Local files carry no server state: the manifest's own
	// resourceVersion (none for a new object) is kept.
	stored.SetResourceVersion(w.sourceRV[objectKey{gvk.GroupKind(), obj.GetNamespace(), obj.GetName()}])
	return w.write(gvk, rel, stored)
}

// delete records a deletion as a stub manifest (apiVersion, kind,
// namespace, name): a folder cannot express a deletion otherwise, and the
// GitOps change removes those objects.
func (w *writer) delete(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
	gvk, err := apiutil.GVKForObject(obj, w.scheme)
	if err != nil {
		return err
	}
	rel, err := w.path(gvk, obj.GetNamespace(), obj.GetName(), true)
	if err != nil {
		return err
	}
	if err := c.Delete(ctx, obj, opts...); err != nil {
		return err
	}
	stub := &unstructured.Unstructured{}
	stub.SetAPIVersion(gvk.GroupVersion().String())
	stub.SetKind(gvk.Kind)
	stub.SetNamespace(obj.GetNamespace())
	stub.SetName(obj.GetName())
	return w.write(gvk, rel, stub.Object)
}

// path is the object's file relative to Output. Names come from objects
// the loader validated, but a stage may create others: the base name is
// still checked to be one path element, and the file is written through
// safepath, so no name can place a file outside Output.
func (w *writer) path(gvk schema.GroupVersionKind, ns, name string, deleted bool) (string, error) {
	if w.folder.Path == nil {
		return "", fmt.Errorf("writing %s %s/%s: this stage writes nothing to a folder", gvk.Kind, ns, name)
	}
	sub, base, err := w.folder.Path(gvk, ns, name, deleted)
	if err != nil {
		return "", err
	}
	if err := safepath.Element(base + ".yaml"); err != nil {
		return "", fmt.Errorf("writing %s: %w", base, err)
	}
	return filepath.Join(sub, base+".yaml"), nil
}

func (w *writer) write(gvk schema.GroupVersionKind, rel string, o any) error {
	b, err := yaml.Marshal(o)
	if err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if gvk.GroupKind() == (schema.GroupKind{Kind: "Secret"}) {
		mode = 0o600 // a Secret's data stays readable by its owner only
	}
	return safepath.WriteFile(w.folder.Output, rel, b, mode)
}
