package nodesim

import (
	"testing"
)

// BenchmarkNodeCheck measures the per-image node check (filter, import,
// deploy, read back) of kiln's fast-path image on a deployed node, next to
// its reference in the same run: starting a node and deploying the base,
// the fixed cost every node check pays once.
func BenchmarkNodeCheck(b *testing.B) {
	base := mustBase(b)
	mc := renderedConfig(b)
	img := buildWithKiln(b, base, mc)
	b.Run("upgrade to kiln's image", func(b *testing.B) {
		n := New(b, Options{})
		if _, err := n.Deploy(base); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := n.Upgrade(img); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference: new node with the base deployed", func(b *testing.B) {
		for b.Loop() {
			n := New(b, Options{})
			if _, err := n.Deploy(base); err != nil {
				b.Fatal(err)
			}
		}
	})
}
