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

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
)

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func sha512Of(b []byte) string {
	s := sha512.Sum512(b)
	return "sha512-" + hex.EncodeToString(s[:])
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256-" + hex.EncodeToString(s[:])
}

func res(hash, compression string) ign35types.Resource {
	var r ign35types.Resource
	if hash != "" {
		r.Verification.Hash = &hash
	}
	if compression != "" {
		r.Compression = &compression
	}
	return r
}

func TestCopyHashesDecompressedContent(t *testing.T) {
	content := []byte(strings.Repeat("node config\n", 50))
	packed := gz(content)
	cases := []struct {
		name        string
		raw         []byte
		r           ign35types.Resource
		wantErr     error
		wantContent bool
	}{
		{"plain, no hash", content, res("", ""), nil, true},
		{"plain, sha512 right", content, res(sha512Of(content), ""), nil, true},
		{"plain, sha256 right", content, res(sha256Of(content), ""), nil, true},
		{"plain, upper-case sum matches as Ignition decodes hex", content, res("sha512-"+strings.ToUpper(sha512Of(content)[7:]), ""), nil, true},
		{"plain, all-zero sha512", content, res("sha512-"+strings.Repeat("0", 128), ""), &HashMismatchError{}, false},
		{"gzip, hash over the decompressed bytes", packed, res(sha512Of(content), "gzip"), nil, true},
		{"gzip, hash over the compressed bytes is refused", packed, res(sha512Of(packed), "gzip"), &HashMismatchError{}, false},
		{"gzip claimed, bytes not gzip", content, res("", "gzip"), gzip.ErrHeader, false},
		{"unknown compression", content, res("", "xz"), ignerrors.ErrCompressionInvalid, false},
		{"unknown hash function", content, res("md5-"+strings.Repeat("0", 32), ""), ignerrors.ErrHashUnrecognized, false},
		{"hash without function", content, res(strings.Repeat("0", 128), ""), ignerrors.ErrHashMalformed, false},
		{"hash of the wrong size", content, res("sha512-abcd", ""), ignerrors.ErrHashWrongSize, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			n, err := Copy(&out, bytes.NewReader(c.raw), c.r, NewLimit(1<<20, "test"))
			switch want := c.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
			case *HashMismatchError:
				var got *HashMismatchError
				if !errors.As(err, &got) {
					t.Fatalf("error %v, want a hash mismatch", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("error %v, want %v", err, want)
				}
			}
			if c.wantContent && (!bytes.Equal(out.Bytes(), content) || n != int64(len(content))) {
				t.Fatalf("wrote %d bytes, want the %d-byte content", n, len(content))
			}
		})
	}
}

// countingReader counts the compressed bytes a reader consumed; it has no
// ReadByte, so gzip buffers it as it would a network body.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestCopyStopsInflatingABombAtTheLimit(t *testing.T) {
	var block bytes.Buffer
	w, _ := gzip.NewWriterLevel(&block, gzip.BestCompression)
	w.Write(make([]byte, 1<<20))
	w.Close()
	bomb := bytes.Repeat(block.Bytes(), 1024) // 1 GiB of zeros, about 1 MiB
	src := &countingReader{r: bytes.NewReader(bomb)}
	lim := ReferenceLimit()
	n, err := Copy(io.Discard, src, res("", "gzip"), lim)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Limit != MaxReferencedConfig {
		t.Fatalf("error %v, want the %d-byte limit", err, MaxReferencedConfig)
	}
	if !strings.Contains(err.Error(), "1572864") {
		t.Errorf("error does not name the limit: %v", err)
	}
	if n > MaxReferencedConfig+1 {
		t.Errorf("inflated %d bytes, more than the limit allows", n)
	}
	if src.n > int64(len(bomb))/100 {
		t.Errorf("read %d of %d compressed bytes: the bomb was not stopped early", src.n, len(bomb))
	}
}

func TestCopyChargesEveryLimitAndStopsAtTheTightest(t *testing.T) {
	pool := NewLimit(1000, "pool")
	one := NewLimit(600, "one source")
	if _, err := Copy(io.Discard, bytes.NewReader(make([]byte, 500)), res("", ""), one, pool); err != nil {
		t.Fatal(err)
	}
	if pool.Used() != 500 || one.Used() != 500 {
		t.Fatalf("charged pool %d, one %d; want 500 each", pool.Used(), one.Used())
	}
	_, err := Copy(io.Discard, bytes.NewReader(make([]byte, 501)), res("", ""), NewLimit(600, "another source"), pool)
	var tl *TooLargeError
	if !errors.As(err, &tl) || tl.Name != "pool" {
		t.Fatalf("error %v, want the pool's limit", err)
	}
}

func TestReferenceContentComparesTheSumAsIgnitionsAssertValid(t *testing.T) {
	cfg := []byte(`{"ignition":{"version":"3.5.0"}}`)
	if _, err := ReferenceContent(gz(cfg), res(sha512Of(cfg), "gzip"), ReferenceLimit()); err != nil {
		t.Fatalf("right hash over the decompressed config refused: %v", err)
	}
	upper := "sha512-" + strings.ToUpper(sha512Of(cfg)[7:])
	var mm *HashMismatchError
	if _, err := ReferenceContent(cfg, res(upper, ""), ReferenceLimit()); !errors.As(err, &mm) {
		t.Fatalf("upper-case sum on a config reference: %v, want a mismatch (AssertValid compares lower-case hex)", err)
	}
	if _, err := ReferenceContent(gz(cfg), res(sha512Of(gz(cfg)), "gzip"), ReferenceLimit()); !errors.As(err, &mm) {
		t.Fatalf("hash over the compressed config: %v, want a mismatch", err)
	}
}
