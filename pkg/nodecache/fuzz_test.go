package nodecache

import (
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// FuzzDecodeEntry feeds arbitrary bytes as an entry: decoding returns a
// base or an error, never panics, and a decoded base re-encodes to the
// same entry.
func FuzzDecodeEntry(f *testing.F) {
	key := strings.Repeat("1f", 32)
	base := baseLayers(f)
	b, err := nodeimport.ReadBase(uncompressed(base), nodeimport.Options{})
	if err != nil {
		f.Fatal(err)
	}
	good, err := encodeEntry(nodeimport.RulesVersion, key, b)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(Format + "\nrules " + nodeimport.RulesVersion + "\nkey " + key + "\n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		b, err := decodeEntry(raw, key)
		if err != nil {
			return
		}
		again, err := encodeEntry(nodeimport.RulesVersion, key, b)
		if err != nil || string(again) != string(raw) {
			t.Errorf("a decoded entry re-encodes to other bytes (%v)", err)
		}
	})
}
