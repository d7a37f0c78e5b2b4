package env

import (
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/hex"
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
