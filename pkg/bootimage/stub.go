package bootimage

import (
	"encoding/json"
	"fmt"
	"strings"

	v2 "github.com/coreos/ign-converter/translate/v23tov30"
	ign2 "github.com/coreos/ignition/config/v2_3"
	v35 "github.com/coreos/ignition/v2/config/v3_5"
	v35types "github.com/coreos/ignition/v2/config/v3_5/types"
)

// UpgradeStub converts a stub Ignition config to spec 3 when it is not
// already. It returns the new document and its version, or changed=false
// when the stub is spec 3. Errors never include the user-data itself:
// stubs carry the machine-config-server's CA and sometimes tokens.
//
// Path: Ignition's own 2.x parser (2.0–2.3, translating older versions up)
// → ign-converter's 2.3→3.0 → Ignition's 3.5 parse-and-translate. MCO
// takes the same route through its common helpers.
func UpgradeStub(userData []byte) (out []byte, version string, changed bool, err error) {
	var head struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
	}
	if err := json.Unmarshal(userData, &head); err != nil {
		return nil, "", false, fmt.Errorf("user-data is not an Ignition JSON document (%s)", jsonErrorKind(err))
	}
	if head.Ignition.Version == "" {
		return nil, "", false, fmt.Errorf("user-data has no ignition.version")
	}
	if strings.HasPrefix(head.Ignition.Version, "3") {
		return nil, head.Ignition.Version, false, nil
	}
	old, _, err := ign2.Parse(userData)
	if err != nil {
		return nil, "", false, fmt.Errorf("parsing Ignition %s stub: %w", head.Ignition.Version, err)
	}
	cfg30, err := v2.Translate(old, nil)
	if err != nil {
		return nil, "", false, fmt.Errorf("converting Ignition %s stub to 3.0: %w", head.Ignition.Version, err)
	}
	raw30, err := json.Marshal(cfg30)
	if err != nil {
		return nil, "", false, fmt.Errorf("encoding Ignition 3.0 stub: %w", err)
	}
	cfg, _, err := v35.ParseCompatibleVersion(raw30)
	if err != nil {
		return nil, "", false, fmt.Errorf("translating Ignition 3.0 stub to %s: %w", v35types.MaxVersion, err)
	}
	out, err = json.Marshal(cfg)
	if err != nil {
		return nil, "", false, fmt.Errorf("encoding Ignition %s stub: %w", cfg.Ignition.Version, err)
	}
	return out, cfg.Ignition.Version, true, nil
}

// jsonErrorKind describes a JSON error without quoting the input.
func jsonErrorKind(err error) string {
	switch e := err.(type) {
	case *json.SyntaxError:
		return fmt.Sprintf("syntax error at byte %d", e.Offset)
	case *json.UnmarshalTypeError:
		return fmt.Sprintf("%s where %s was expected", e.Value, e.Type)
	}
	return "malformed JSON"
}
