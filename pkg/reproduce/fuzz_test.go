package reproduce

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The config flattener takes any JSON a registry serves without
// panicking; equal input flattens equal.
func FuzzFlattenConfig(f *testing.F) {
	f.Add([]byte(`{"config":{"Labels":{"a":"b"},"Env":["A=1","B"]},"history":[{"created_by":"x"}],"rootfs":{"diff_ids":["sha256:1"]}}`))
	f.Add([]byte(`{"config":{"Labels":null,"Env":[1,{}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := flattenConfig(b)
		if err != nil {
			return
		}
		c, _ := flattenConfig(b)
		if len(appendFlat(nil, a, c)) != 0 {
			t.Errorf("the same config differs from itself")
		}
	})
}

// Any tar stream (a layer's content is the registry's word) is listed or
// refused with an error, never a panic.
func FuzzListLayer(f *testing.F) {
	var buf bytes.Buffer
	f.Add(buf.Bytes())
	f.Add([]byte("not a tar"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			return
		}
		_, _, _ = listLayer(l)
	})
}
