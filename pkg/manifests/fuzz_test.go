package manifests_test

import (
	"bytes"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/validation/path"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
)

// FuzzDecodeAcceptsOnlyNames feeds arbitrary streams to the reader. It
// must not panic, and whatever it accepts has a name that is a single
// path segment (no "/", not "." or ".."), at most 253 characters, and
// appears once: what kiln may later turn into a path or a run name.
func FuzzDecodeAcceptsOnlyNames(f *testing.F) {
	for _, tc := range refused {
		f.Add([]byte(tc.manifest))
	}
	for _, tc := range typos {
		f.Add([]byte(tc.manifest))
	}
	f.Add([]byte(mdHead + "metadata: {name: a, namespace: kmm}\n" + mdSpec))
	f.Add([]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		seen := map[string]bool{}
		err := manifests.Decode("fuzz.yaml", bytes.NewReader(in), func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err != nil {
				t.Fatalf("accepted %T without metadata", o)
			}
			name := m.GetName()
			if len(name) == 0 || len(name) > 253 || len(path.IsValidPathSegmentName(name)) > 0 {
				t.Fatalf("accepted %s with name %q", manifests.ObjectName(o), name)
			}
			key := o.GetObjectKind().GroupVersionKind().GroupKind().String() + "/" + m.GetNamespace() + "/" + name
			if seen[key] {
				t.Fatalf("accepted %s twice", key)
			}
			seen[key] = true
			return nil
		})
		_ = err
	})
}
