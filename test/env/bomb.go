package env

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"strings"
)

// GzipZeros is a multi-stream gzip of mib blocks of 1 MiB of zeros, about
// 1 KiB per MiB: a decompression bomb that Go's gzip reader, and so
// Ignition's, reads as valid.
func GzipZeros(mib int) []byte {
	var block bytes.Buffer
	w, _ := gzip.NewWriterLevel(&block, gzip.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Close()
	return bytes.Repeat(block.Bytes(), mib)
}

// SHA512Zeros is Ignition's verification.hash ("sha512-<hex>") of n zero
// bytes, computed without holding them.
func SHA512Zeros(n int) string {
	h := sha512.New()
	block := make([]byte, 1<<20)
	for ; n > 0; n -= len(block) {
		h.Write(block[:min(n, len(block))])
	}
	return "sha512-" + hex.EncodeToString(h.Sum(nil))
}

// NestedKeyBomb is an Ignition 3.5 config with keys unknown keys, each
// holding JSON objects nested depth levels deep: valid JSON that Ignition
// accepts with a warning, 6 bytes a level, and whose parse costs
// memory with every level (github.com/coreos/vcontext keeps a node and its
// position for each).
func NestedKeyBomb(keys, depth int) string {
	var b strings.Builder
	b.WriteString(`{"ignition":{"version":"3.5.0"}`)
	for i := 0; i < keys; i++ {
		fmt.Fprintf(&b, `,"x-kiln-bomb-%d":`, i)
		b.WriteString(strings.Repeat(`{"a":`, depth))
		b.WriteString("1")
		b.WriteString(strings.Repeat("}", depth))
	}
	b.WriteString("}")
	return b.String()
}
