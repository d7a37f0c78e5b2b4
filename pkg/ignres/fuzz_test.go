package ignres

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzCopy feeds arbitrary bytes, compression and verification.hash to
// Copy and ReferenceContent. They must never panic, never write more than
// the limit, and accept only content whose hash (when one is given) is the
// hash of what they wrote: the hash covers the decompressed bytes.
func FuzzCopy(f *testing.F) {
	f.Add([]byte("hello"), "", "")
	f.Add(gz([]byte("hello")), "gzip", sha512Of([]byte("hello")))
	f.Add(gz([]byte("hello")), "gzip", sha512Of(gz([]byte("hello"))))
	f.Add([]byte("hello"), "", "sha256-"+strings.Repeat("0", 64))
	f.Add(bytes.Repeat(gz(make([]byte, 4096)), 4), "gzip", "")
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, "gzip", "sha512-")
	f.Fuzz(func(t *testing.T, raw []byte, compression, hash string) {
		r := res(hash, compression)
		const limit = 8192
		var out bytes.Buffer
		n, err := Copy(&out, bytes.NewReader(raw), r, NewLimit(limit, "fuzz"))
		if n > limit+1 || int64(out.Len()) != n {
			t.Fatalf("wrote %d bytes (reported %d), limit %d", out.Len(), n, limit)
		}
		if err != nil {
			if errors.Is(err, ErrTooLarge) && n <= limit {
				t.Fatalf("too large after only %d bytes", n)
			}
			return
		}
		if n > limit {
			t.Fatalf("accepted %d bytes over the %d limit", n, limit)
		}
		if hash != "" {
			fn, sum, _ := strings.Cut(hash, "-")
			var got []byte
			switch fn {
			case "sha512":
				s := sha512.Sum512(out.Bytes())
				got = s[:]
			case "sha256":
				s := sha256.Sum256(out.Bytes())
				got = s[:]
			default:
				t.Fatalf("accepted hash function %q", fn)
			}
			if want, _ := hex.DecodeString(sum); !bytes.Equal(got, want) {
				t.Fatalf("accepted content whose %s is not %s", fn, sum)
			}
		}
		if compression == "" && !bytes.Equal(out.Bytes(), raw) {
			t.Fatal("uncompressed content changed")
		}
		if compression == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Fatalf("accepted bytes gzip cannot open: %v", err)
			}
			want, _ := io.ReadAll(io.LimitReader(zr, limit+1))
			if !bytes.Equal(want, out.Bytes()) {
				t.Fatal("decompressed content differs from gzip's")
			}
		}
		// A reference accepts only what Copy accepts (and a lower-case sum).
		if _, err := ReferenceContent(raw, r, NewLimit(limit, "fuzz")); err == nil && hash != "" {
			_, sum, _ := strings.Cut(hash, "-")
			if sum != strings.ToLower(sum) {
				t.Fatalf("reference accepted upper-case sum %q", sum)
			}
		}
	})
}
