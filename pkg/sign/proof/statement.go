package proof

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	intoto "github.com/in-toto/in-toto-golang/in_toto"
)

// StatementOf decodes a verified attestation: a DSSE envelope whose
// payload is the in-toto statement.
func StatementOf(att interface{ Payload() ([]byte, error) }) (intoto.Statement, error) {
	var st intoto.Statement
	b, err := att.Payload()
	if err != nil {
		return st, err
	}
	var env struct {
		Payload string `json:"payload"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return st, fmt.Errorf("decoding the DSSE envelope: %w", err)
	}
	raw, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return st, fmt.Errorf("decoding the DSSE payload: %w", err)
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("decoding the in-toto statement: %w", err)
	}
	return st, nil
}
