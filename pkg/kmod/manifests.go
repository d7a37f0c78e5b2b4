package kmod

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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// loadConfigMaps reads every ConfigMap (also inside v1 Lists) from the
// YAML/JSON manifests under dir, as render's LoadDir reads its objects.
// pkg/render cannot be imported here: its tests import pkg/kmod. Other
// kinds are ignored; a document that is no Kubernetes object is an error
// naming the file and document.
func loadConfigMaps(dir string) ([]*corev1.ConfigMap, error) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	dec := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	var out []*corev1.ConfigMap
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		cms, err := decodeConfigMaps(dec, f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, cms...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading manifests from %s: %w", dir, err)
	}
	return out, nil
}

// decodeConfigMaps decodes one multi-document manifest stream.
func decodeConfigMaps(dec runtime.Decoder, in io.Reader) ([]*corev1.ConfigMap, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var out []*corev1.ConfigMap
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if onlyComments(raw) {
			continue
		}
		cms, err := decodeObject(dec, raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, cms...)
	}
}

func decodeObject(dec runtime.Decoder, raw []byte) ([]*corev1.ConfigMap, error) {
	obj, _, err := dec.Decode(raw, nil, nil)
	switch {
	case runtime.IsNotRegisteredError(err):
		return nil, nil // a kind kmod-build does not read
	case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err):
		return nil, errors.New("apiVersion and kind are required")
	case err != nil:
		return nil, err
	}
	switch t := obj.(type) {
	case *corev1.ConfigMap:
		return []*corev1.ConfigMap{t}, nil
	case *corev1.List:
		var out []*corev1.ConfigMap
		for i, item := range t.Items {
			cms, err := decodeObject(dec, item.Raw)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, cms...)
		}
		return out, nil
	}
	return nil, nil
}

func onlyComments(raw []byte) bool {
	for _, l := range strings.Split(string(bytes.TrimSpace(raw)), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") && l != "---" {
			return false
		}
	}
	return true
}
