// Package manifests reads Kubernetes objects from a folder of manifests —
// a GitOps checkout, or the input of local mode — the one way every stage
// reads them: every .yaml, .yml and .json file under the folder, several
// YAML documents per file, v1 Lists expanded.
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
	dec := serializer.NewCodecFactory(scheme).UniversalDeserializer()
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
	return decodeStream(serializer.NewCodecFactory(scheme).UniversalDeserializer(), name, in, fn)
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
	case err != nil:
		return err
	}
	var items []runtime.RawExtension
	switch t := obj.(type) {
	case *metav1.List:
		items = t.Items
	case *corev1.List:
		items = t.Items
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

func onlyComments(raw []byte) bool {
	for _, l := range strings.Split(string(bytes.TrimSpace(raw)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
