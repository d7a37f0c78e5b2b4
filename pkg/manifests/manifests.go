package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// Walk calls fn for every object under dir, in file-name order: a typed
// object for kinds kiln's scheme knows, *unstructured.Unstructured for the
// others (Cluster API kinds, say), so each caller keeps what it reads. A
// document without apiVersion and kind is an error naming the file and
// the document; so is an object the apiserver would refuse (see check)
// and a second object of the same kind, namespace and name.
//
// Only regular files (or symlinks to one) of at most MaxFileBytes are
// read; anything else named like a manifest is an error naming it.
func Walk(dir string, fn func(runtime.Object) error) error {
	r, err := newReader(fn)
	if err != nil {
		return err
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		b, err := readManifest(path, d)
		if err != nil {
			return err
		}
		return r.stream(path, b)
	})
	if err != nil {
		return fmt.Errorf("loading manifests from %s: %w", dir, err)
	}
	return nil
}

// Decode reads one manifest stream named name, as Walk reads a file.
func Decode(name string, in io.Reader, fn func(runtime.Object) error) error {
	r, err := newReader(fn)
	if err != nil {
		return err
	}
	b, err := readCapped(name, in)
	if err != nil {
		return err
	}
	return r.stream(name, b)
}

// reader decodes the documents of one folder (or stream), remembering
// where each object was first seen.
type reader struct {
	scheme *runtime.Scheme
	dec    runtime.Decoder
	fn     func(runtime.Object) error
	seen   map[objectKey]string
}

func newReader(fn func(runtime.Object) error) (*reader, error) {
	scheme, err := apis.NewScheme()
	if err != nil {
		return nil, err
	}
	return &reader{scheme: scheme, dec: strictDecoder(scheme), fn: fn, seen: map[objectKey]string{}}, nil
}

// strictDecoder refuses unknown and duplicate fields, the checks the
// apiserver's strict field validation makes, so a directory is held to
// what the cluster would accept.
func strictDecoder(scheme *runtime.Scheme) runtime.Decoder {
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

func (r *reader) stream(name string, b []byte) error {
	y := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for doc := 1; ; doc++ {
		raw, err := y.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if onlyComments(raw) {
			continue
		}
		if err := r.decode(raw, fmt.Sprintf("%s document %d", name, doc)); err != nil {
			// A document that does not decode strictly is a rejected
			// input (its own exit code); fn's errors keep theirs.
			if exitcode.CodeOf(err) == exitcode.ExitFailure {
				err = exitcode.InputRejected(err)
			}
			return fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
	}
}

func (r *reader) decode(raw []byte, where string) error {
	obj, gvk, err := r.dec.Decode(raw, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		u, err := toUnstructured(raw)
		if err != nil {
			return err
		}
		if err := checkKnown(r.scheme, u.GroupVersionKind()); err != nil {
			return fmt.Errorf("%s: %w", ObjectName(u), err)
		}
		return r.accept(u, u.GroupVersionKind(), raw, where)
	case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err):
		return errors.New("apiVersion and kind are required")
	case runtime.IsStrictDecodingError(err) && obj != nil:
		return fmt.Errorf("%s: %w", ObjectName(obj), err)
	case err != nil:
		return err
	}
	var items []runtime.RawExtension
	switch t := obj.(type) {
	case *metav1.List:
		items = t.Items
	case *corev1.List:
		items = t.Items
	case *corev1.Secret:
		mergeStringData(t)
		return r.accept(t, *gvk, raw, where)
	default:
		if !meta.IsListType(obj) {
			return r.accept(obj, *gvk, raw, where)
		}
		if items, err = typedListItems(raw, *gvk); err != nil {
			return err
		}
	}
	for i, item := range items {
		if err := r.decode(item.Raw, fmt.Sprintf("%s items[%d]", where, i)); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}

// accept checks obj as the apiserver would on create (raw is the document
// as written, for the CRD schema), refuses a second object of the same
// kind, namespace and name, and hands obj to fn.
func (r *reader) accept(obj runtime.Object, gvk schema.GroupVersionKind, raw []byte, where string) error {
	if err := r.check(obj, gvk, raw); err != nil {
		return fmt.Errorf("%s: %w", ObjectName(obj), err)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	key := objectKey{gk: gvk.GroupKind(), namespace: m.GetNamespace(), name: m.GetName()}
	if first, dup := r.seen[key]; dup {
		return fmt.Errorf("%s: duplicate: also defined in %s; the apiserver keeps one object per kind, namespace and name", key, first)
	}
	r.seen[key] = where
	return r.fn(obj)
}

// check applies the apiserver's validation of a create: ObjectMeta (name
// rule, namespace, labels, annotations), ConfigMap and Secret keys, and
// for kiln's custom resources their CRD's schema and CEL rules. The error
// is the apiserver's field.ErrorList, aggregated as it words it.
func (r *reader) check(obj runtime.Object, gvk schema.GroupVersionKind, raw []byte) error {
	errs := validateMeta(obj, gvk.GroupKind())
	u, err := toUnstructured(raw)
	if err != nil {
		return err
	}
	if errs, err = validateSchema(gvk, u.Object, errs); err != nil {
		return err
	}
	if len(errs) > 0 {
		return exitcode.InputRejected(errs.ToAggregate())
	}
	return nil
}

// typedListItems splits a typed list (ImageDigestMirrorSetList, say) into
// its items, each given the list's apiVersion and the item kind when it
// does not name them, so that every item is checked and handed over as
// the object the apiserver would store.
func typedListItems(raw []byte, gvk schema.GroupVersionKind) ([]runtime.RawExtension, error) {
	u, err := toUnstructured(raw)
	if err != nil {
		return nil, err
	}
	list, _, err := unstructured.NestedSlice(u.Object, "items")
	if err != nil {
		return nil, err
	}
	kind := strings.TrimSuffix(gvk.Kind, "List")
	out := make([]runtime.RawExtension, 0, len(list))
	for i, it := range list {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("items[%d]: not an object", i)
		}
		item := &unstructured.Unstructured{Object: m}
		if item.GetAPIVersion() == "" {
			item.SetAPIVersion(gvk.GroupVersion().String())
		}
		if item.GetKind() == "" {
			item.SetKind(kind)
		}
		b, err := item.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("items[%d]: %w", i, err)
		}
		out = append(out, runtime.RawExtension{Raw: b})
	}
	return out, nil
}

// toUnstructured decodes a document into plain JSON values (int64 and
// float64 numbers, as the apiserver's decoder and schema validators use).
func toUnstructured(raw []byte) (*unstructured.Unstructured, error) {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return nil, err
	}
	return u, nil
}

// mergeStringData does what the apiserver does when it stores a Secret:
// every stringData entry is written into data, overwriting a data entry of
// the same key, and stringData is dropped.
func mergeStringData(s *corev1.Secret) {
	if len(s.StringData) == 0 {
		s.StringData = nil
		return
	}
	if s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// ObjectName names an object as errors do: Kind namespace/name, or Kind
// name for cluster-scoped objects.
func ObjectName(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if kind == "" {
		kind = fmt.Sprintf("%T", obj)
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return kind
	}
	name := m.GetName()
	if name == "" {
		name = "(no name)"
	}
	if m.GetNamespace() == "" {
		return kind + " " + name
	}
	return kind + " " + m.GetNamespace() + "/" + name
}

func onlyComments(raw []byte) bool {
	for _, l := range strings.Split(string(bytes.TrimSpace(raw)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
