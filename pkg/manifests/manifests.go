// Package manifests reads Kubernetes objects from a folder of manifests —
// a GitOps checkout, or the input of local mode — the one way every stage
// reads them: every .yaml, .yml and .json file under the folder, several
// YAML documents per file, v1 Lists expanded.
//
// Kinds kiln's scheme knows (its own ModuleDay0 and BootImageHistory, the
// OpenShift and Kubernetes kinds it reads) are decoded strictly, as the
// apiserver does with fieldValidation=Strict: an unknown or duplicated
// field is an error naming the file, the object and the field path, never
// silently dropped. A Secret's stringData is merged into data as the
// apiserver does on write, so every reader sees one form.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kiln-dev/kiln/pkg/step"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/apis"
)

// Walk calls fn for every object under dir, in file-name order: a typed
// object for kinds kiln's scheme knows, *unstructured.Unstructured for the
// others (Cluster API kinds, say), so each caller keeps what it reads. A
// document without apiVersion and kind is an error naming the file and
// the document.
func Walk(dir string, fn func(runtime.Object) error) error {
	scheme, err := apis.NewScheme()
	if err != nil {
		return err
	}
	dec := strictDecoder(scheme)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return decodeStream(dec, path, f, fn)
	})
	if err != nil {
		return fmt.Errorf("loading manifests from %s: %w", dir, err)
	}
	return nil
}

// Decode reads one manifest stream named name, as Walk reads a file.
func Decode(name string, in io.Reader, fn func(runtime.Object) error) error {
	scheme, err := apis.NewScheme()
	if err != nil {
		return err
	}
	return decodeStream(strictDecoder(scheme), name, in, fn)
}

// strictDecoder refuses unknown and duplicate fields, the checks the
// apiserver's strict field validation makes, so a directory is held to
// what the cluster would accept.
func strictDecoder(scheme *runtime.Scheme) runtime.Decoder {
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}

func decodeStream(dec runtime.Decoder, name string, in io.Reader, fn func(runtime.Object) error) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
		if onlyComments(raw) {
			continue
		}
		if err := decode(dec, raw, fn); err != nil {
			// A document that does not decode strictly is a rejected
			// input (its own exit code); fn's errors keep theirs.
			if step.CodeOf(err) == step.ExitFailure {
				err = step.InputRejected(err)
			}
			return fmt.Errorf("%s: document %d: %w", name, doc, err)
		}
	}
}

func decode(dec runtime.Decoder, raw []byte, fn func(runtime.Object) error) error {
	obj, _, err := dec.Decode(raw, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		return unknownKind(raw, fn)
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
		return fn(t)
	default:
		return fn(obj)
	}
	for i, item := range items {
		if err := decode(dec, item.Raw, fn); err != nil {
			return fmt.Errorf("items[%d]: %w", i, err)
		}
	}
	return nil
}

// unknownKind hands a kind the scheme does not know over as unstructured.
func unknownKind(raw []byte, fn func(runtime.Object) error) error {
	j, err := yaml.YAMLToJSON(raw)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		return err
	}
	return fn(u)
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
	if m.GetNamespace() == "" {
		return kind + " " + m.GetName()
	}
	return kind + " " + m.GetNamespace() + "/" + m.GetName()
}

func onlyComments(raw []byte) bool {
	for _, l := range strings.Split(string(bytes.TrimSpace(raw)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
