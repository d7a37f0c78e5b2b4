package trust

import (
	"errors"
	"strings"
)

// Reason is why err (wrapping ErrNotProven) proved nothing: the text after
// "no kiln attestation for these inputs: ", for a one-line rejection
// message. It is "" for an error that does not wrap ErrNotProven.
func Reason(err error) string {
	if err == nil || !errors.Is(err, ErrNotProven) {
		return ""
	}
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, ErrNotProven.Error()+": "); ok {
		return after
	}
	return msg
}
