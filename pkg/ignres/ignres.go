package ignres

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"

	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/vincent-petithory/dataurl"
)

// MaxRenderedConfig is MCO's cap on a rendered MachineConfig: 1,572,864
// bytes (1.5 MiB, etcd's request limit).
const MaxRenderedConfig = 1572864

// MaxReferencedConfig is the most bytes a referenced config
// (ignition.config.merge/replace) may hold after decompression: a
// referenced config is merged into the rendered one, so one larger than
// MaxRenderedConfig could never be rendered.
const MaxReferencedConfig int64 = MaxRenderedConfig

// MaxContent is the most bytes, after decompression, that the files,
// appends and TLS CAs of one rendered config may hold together (64 MiB), and
// the most render inflates while checking the sources of one pool. A
// rendered config is at most 1.5 MiB; gzip inflates up to about 1000 times,
// so without a cap 1.5 MiB of config would be 1.5 GiB in memory.
const MaxContent int64 = 64 << 20

// ErrTooLarge is wrapped by TooLargeError.
var ErrTooLarge = errors.New("decompressed size limit exceeded")

// TooLargeError says a source holds more than Limit bytes once decompressed.
type TooLargeError struct {
	// Limit is the number of bytes allowed; Name says which limit it is.
	Limit int64
	Name  string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("holds more than %d bytes after decompression (%s); refused before inflating further", e.Limit, e.Name)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// HashMismatchError is a verification.hash that does not match the
// content.
type HashMismatchError struct {
	Function             string
	Calculated, Expected string
	// Compressed says the hash was taken after decompression.
	Compressed bool
}

func (e *HashMismatchError) Error() string {
	over := "content"
	if e.Compressed {
		over = "decompressed content"
	}
	return fmt.Sprintf("verification.hash mismatch: %s of the %s is %s, expected %s", e.Function, over, e.Calculated, e.Expected)
}

// Limit is a budget of decompressed bytes shared by several reads.
type Limit struct {
	// Max is the budget; Name names it in errors.
	Max  int64
	Name string
	used int64
}

func (l *Limit) left() int64 { return max(l.Max-l.used, 0) }

// Used is the number of bytes charged so far.
func (l *Limit) Used() int64 { return l.used }

// NewLimit returns a budget of max bytes.
func NewLimit(max int64, name string) *Limit { return &Limit{Max: max, Name: name} }

// ContentLimit is a fresh MaxContent budget.
func ContentLimit() *Limit {
	return NewLimit(MaxContent, "kiln's cap on the decompressed content of one rendered config, ignres.MaxContent")
}

// ReferenceLimit is a fresh MaxReferencedConfig budget.
func ReferenceLimit() *Limit {
	return NewLimit(MaxReferencedConfig, "a referenced config is merged into the rendered config, capped at 1572864 bytes")
}

// Verifier is a parsed verification.hash: nil Hash means none.
type Verifier struct {
	Function string
	Hash     hash.Hash
	Sum      []byte
}

// ParseHash reads verification.hash as Ignition's util.GetHasher and
// util.HashParts do: "<function>-<hex sum>", function sha512 or sha256.
func ParseHash(v ign35types.Verification) (Verifier, error) {
	if v.Hash == nil {
		return Verifier{}, nil
	}
	function, sum, err := v.HashParts()
	if err != nil {
		return Verifier{}, fmt.Errorf("verification.hash: %w", err)
	}
	var h hash.Hash
	switch function {
	case "sha512":
		h = sha512.New()
	case "sha256":
		h = sha256.New()
	default:
		return Verifier{}, fmt.Errorf("verification.hash: %w %q (Ignition supports sha512 and sha256)", ignerrors.ErrHashUnrecognized, function)
	}
	want, err := hex.DecodeString(sum)
	if err != nil {
		return Verifier{}, fmt.Errorf("verification.hash: sum is not hex: %w", err)
	}
	if len(want) != h.Size() {
		return Verifier{}, fmt.Errorf("verification.hash: %w: %s needs %d hex digits, got %d", ignerrors.ErrHashWrongSize, function, 2*h.Size(), len(sum))
	}
	return Verifier{Function: function, Hash: h, Sum: want}, nil
}

// Compressed reports whether r asks for decompression.
func Compressed(r ign35types.Resource) bool {
	return r.Compression != nil && *r.Compression != ""
}

// Copy decompresses src as r.Compression says, writes the content to dst
// while hashing it, and checks r.Verification.Hash over the content, as
// Ignition's decompressCopyHashAndVerify does. Every limit is charged with
// the content's size; Copy stops with a TooLargeError as soon as the
// content passes what is left of the tightest one.
func Copy(dst io.Writer, src io.Reader, r ign35types.Resource, lim *Limit, more ...*Limit) (int64, error) {
	lims := append([]*Limit{lim}, more...)
	v, err := ParseHash(r.Verification)
	if err != nil {
		return 0, err
	}
	content := src
	switch c := ptrStr(r.Compression); c {
	case "":
	case "gzip":
		zr, err := gzip.NewReader(src)
		if err != nil {
			return 0, fmt.Errorf("gunzipping: %w", err)
		}
		defer zr.Close()
		content = zr
	default:
		return 0, fmt.Errorf("compression %q: %w (Ignition supports gzip)", c, ignerrors.ErrCompressionInvalid)
	}
	if v.Hash != nil {
		dst = io.MultiWriter(dst, v.Hash)
	}
	tight := lims[0]
	for _, l := range lims[1:] {
		if l.left() < tight.left() {
			tight = l
		}
	}
	left := tight.left()
	n, err := io.Copy(dst, io.LimitReader(content, left+1))
	for _, l := range lims {
		l.used += n
	}
	if err != nil {
		if Compressed(r) {
			return n, fmt.Errorf("gunzipping: %w", err)
		}
		return n, err
	}
	if n > left {
		return n, &TooLargeError{Limit: tight.Max, Name: tight.Name}
	}
	if v.Hash != nil {
		if got := v.Hash.Sum(nil); !bytes.Equal(got, v.Sum) {
			return n, &HashMismatchError{Function: v.Function, Calculated: hex.EncodeToString(got), Expected: hex.EncodeToString(v.Sum), Compressed: Compressed(r)}
		}
	}
	return n, nil
}

// Content returns the decompressed, verified content of raw.
func Content(raw []byte, r ign35types.Resource, lim *Limit, more ...*Limit) ([]byte, error) {
	var buf bytes.Buffer
	if !Compressed(r) {
		buf.Grow(len(raw))
	}
	if _, err := Copy(&buf, bytes.NewReader(raw), r, lim, more...); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReferenceContent returns the decompressed content of a referenced config
// (ignition.config.merge/replace) and checks its hash the way Ignition's
// fetchReferencedConfig does: decompress first, then util.AssertValid,
// which compares the sum as a lower-case hex string (so, unlike for files,
// an upper-case sum does not match).
func ReferenceContent(raw []byte, r ign35types.Resource, lim *Limit, more ...*Limit) ([]byte, error) {
	v, err := ParseHash(r.Verification)
	if err != nil {
		return nil, err
	}
	unhashed := r
	unhashed.Verification = ign35types.Verification{}
	content, err := Content(raw, unhashed, lim, more...)
	if err != nil || v.Hash == nil {
		return content, err
	}
	_, sum, _ := r.Verification.HashParts()
	v.Hash.Write(content)
	if got := hex.EncodeToString(v.Hash.Sum(nil)); got != sum {
		return nil, &HashMismatchError{Function: v.Function, Calculated: got, Expected: sum, Compressed: Compressed(r)}
	}
	return content, nil
}

// DataURL decodes a data: URL with the library Ignition uses.
func DataURL(src string) ([]byte, error) {
	d, err := dataurl.DecodeString(src)
	if err != nil {
		return nil, fmt.Errorf("decoding data URL: %w", err)
	}
	return d.Data, nil
}

func ptrStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
