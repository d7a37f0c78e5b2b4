package nodecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// encodeEntry is an entry's bytes: four header lines (the format, the
// rules version, the full key, the sha256 of the body) and the encoded
// base as the body. The sum catches a damaged file, which the body's
// structure alone would not always show (a changed byte in a path).
func encodeEntry(rules, key string, b *nodeimport.Base) ([]byte, error) {
	raw, err := b.MarshalBinary()
	if err != nil {
		return nil, err
	}
	head := fmt.Sprintf("%s\nrules %s\nkey %s\nsum %s\n", Format, rules, key, sum(raw))
	return append([]byte(head), raw...), nil
}

// decodeEntry checks an entry's header against this kiln's format and
// rules, against key and against the body's sum, and decodes its base.
func decodeEntry(raw []byte, key string) (*nodeimport.Base, error) {
	var line []byte
	for _, want := range []string{Format, "rules " + nodeimport.RulesVersion, "key " + key, "sum "} {
		var ok bool
		line, raw, ok = bytes.Cut(raw, []byte("\n"))
		if !ok || string(line) != want && want != "sum " {
			return nil, fmt.Errorf("its header says %q, want %q", clip(line), want)
		}
	}
	if got := "sum " + sum(raw); string(line) != got {
		return nil, fmt.Errorf("its header says %q, its body has %q", clip(line), got)
	}
	return nodeimport.UnmarshalBase(raw)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// clip shortens a header line for a message.
func clip(b []byte) string {
	if len(b) > 100 {
		return string(b[:100]) + "…"
	}
	return string(b)
}
