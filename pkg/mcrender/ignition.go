package mcrender

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/clarketm/json"
	"github.com/coreos/ign-converter/translate/v23tov30"
	ign2errors "github.com/coreos/ignition/config/shared/errors"
	ign22 "github.com/coreos/ignition/config/v2_2"
	ign22types "github.com/coreos/ignition/config/v2_2/types"
	ign23 "github.com/coreos/ignition/config/v2_3"
	ign3errors "github.com/coreos/ignition/v2/config/shared/errors"
	v31translate "github.com/coreos/ignition/v2/config/v3_1/translate"
	v32translate "github.com/coreos/ignition/v2/config/v3_2/translate"
	v33translate "github.com/coreos/ignition/v2/config/v3_3/translate"
	v34translate "github.com/coreos/ignition/v2/config/v3_4/translate"
	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	v35translate "github.com/coreos/ignition/v2/config/v3_5/translate"
	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/ignition/v2/config/validate"

	"github.com/kiln-dev/kiln/pkg/ignres"
)

// coreUser is the only user MCO lets MachineConfigs manage.
const coreUser = "core"

// supportedSpecs is what the parse error lists, like MCO's converter does.
const supportedSpecs = "2.2, 3.0, 3.1, 3.2, 3.3, 3.4, 3.5"

// emptyConfig is what an MC without an Ignition config contributes: nothing,
// at the newest spec.
func emptyConfig() ign35types.Config {
	return ign35types.Config{Ignition: ign35types.Ignition{Version: ign35types.MaxVersion.String()}}
}

// parseConfig parses any spec 3.x (≤ 3.5) or spec 2.x Ignition config into
// spec 3.5, the way MCO's ParseAndConvertConfig does: 3.x through Ignition's
// own ParseCompatibleVersion; 2.x through Ignition's v2_2 parser, MCO's
// duplicate removal, then ign-converter's 2.3→3.0 and Ignition's 3.x
// translators. An empty raw config is the empty 3.5 config. A config
// deeper or larger than ignres.CheckShape allows is refused before
// Ignition's parser, whose cost grows with every value, sees it.
func parseConfig(raw []byte) (ign35types.Config, error) {
	if len(raw) == 0 {
		return emptyConfig(), nil
	}
	if err := ignres.CheckShape(raw); err != nil {
		return ign35types.Config{}, err
	}
	cfg, rpt, err := ign35.ParseCompatibleVersion(raw)
	if err == nil && !rpt.IsFatal() {
		return cfg, nil
	}
	switch {
	case errors.Is(err, ign3errors.ErrInvalidVersion):
		return ign35types.Config{}, fmt.Errorf("ignition.version is not a version: supported spec versions: %s", supportedSpecs)
	case errors.Is(err, ign3errors.ErrUnknownVersion):
		return parseSpec2(raw)
	case err == nil:
		err = ign3errors.ErrInvalid
	}
	return ign35types.Config{}, fmt.Errorf("parsing Ignition spec 3 config: %v%s", err, ReportSuffix(rpt.String()))
}

func parseSpec2(raw []byte) (ign35types.Config, error) {
	cfg2, rpt, err := ign22.Parse(raw)
	if err != nil || rpt.IsFatal() {
		if errors.Is(err, ign2errors.ErrUnknownVersion) {
			return ign35types.Config{}, fmt.Errorf("ignition.version is unsupported: supported spec versions: %s", supportedSpecs)
		}
		if err == nil {
			err = ign2errors.ErrInvalid
		}
		return ign35types.Config{}, fmt.Errorf("parsing Ignition spec 2 config: %v%s", err, ReportSuffix(rpt.String()))
	}
	cfg2, err = dedupeSpec2(cfg2)
	if err != nil {
		return ign35types.Config{}, err
	}
	// Spec 2 paths are relative to a named filesystem; MCO maps only "root".
	v30, err := v23tov30.Translate(ign23.Translate(cfg2), map[string]string{"root": "/"})
	if err != nil {
		return ign35types.Config{}, fmt.Errorf("converting Ignition spec 2 config to spec 3: %w", err)
	}
	return v35translate.Translate(v34translate.Translate(v33translate.Translate(v32translate.Translate(v31translate.Translate(v30))))), nil
}

// ReportSuffix formats an Ignition parse report as the suffix of an error
// message, so a referenced config's parse error (pkg/render) reads like an
// MC's own.
func ReportSuffix(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	return ": " + strings.ReplaceAll(s, "\n", "; ")
}

// dedupeSpec2 removes what spec 3 forbids and spec 2 allowed: duplicate
// files and units (the last entry wins; dropins of earlier duplicates are
// added when their name is new) and several entries for the core user
// (their SSH keys are concatenated, newest entry first, then deduplicated).
// MCO does the same before converting; any user other than core is refused.
func dedupeSpec2(cfg ign22types.Config) (ign22types.Config, error) {
	seenFile := map[string]bool{}
	var files []ign22types.File
	for i := len(cfg.Storage.Files) - 1; i >= 0; i-- {
		f := cfg.Storage.Files[i]
		if !seenFile[f.Path] {
			seenFile[f.Path] = true
			files = append(files, f)
		}
	}
	unitAt := map[string]int{}
	var units []ign22types.Unit
	for i := len(cfg.Systemd.Units) - 1; i >= 0; i-- {
		u := cfg.Systemd.Units[i]
		at, dup := unitAt[u.Name]
		if !dup {
			unitAt[u.Name] = len(units)
			units = append(units, u)
			continue
		}
		for _, d := range u.Dropins {
			if !hasDropin(units[at].Dropins, d.Name) {
				units[at].Dropins = append(units[at].Dropins, d)
			}
		}
	}
	if n := len(cfg.Passwd.Users); n > 0 {
		out := cfg.Passwd.Users[n-1]
		for i := n - 1; i >= 0; i-- {
			u := cfg.Passwd.Users[i]
			if u.Name != coreUser {
				return cfg, fmt.Errorf("passwd.users[%d]: user %q is not supported: only the core user is", i, u.Name)
			}
			if i < n-1 {
				out.SSHAuthorizedKeys = append(out.SSHAuthorizedKeys, u.SSHAuthorizedKeys...)
			}
		}
		out.SSHAuthorizedKeys = uniqueKeys(out.SSHAuthorizedKeys)
		cfg.Passwd.Users = []ign22types.PasswdUser{out}
	}
	cfg.Storage.Files = files
	cfg.Systemd.Units = units
	return cfg, nil
}

func hasDropin(ds []ign22types.SystemdDropin, name string) bool {
	for _, d := range ds {
		if d.Name == name {
			return true
		}
	}
	return false
}

func uniqueKeys(keys []ign22types.SSHAuthorizedKey) []ign22types.SSHAuthorizedKey {
	seen := map[ign22types.SSHAuthorizedKey]bool{}
	out := []ign22types.SSHAuthorizedKey{}
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

// coreUserOnly refuses a passwd.users entry other than core. MCO's
// render controller merges such a config, but its daemon refuses to apply
// it ("ignition passwd user section contains unsupported changes: non-core
// user", reconcilable in
// https://github.com/openshift/machine-config-operator/blob/master/pkg/daemon/update.go),
// so a pool given one degrades. kiln would bake it into the image first:
// it is refused before the build, at every spec version (spec 2 configs
// are refused earlier, on their way to spec 3, as MCO does).
func coreUserOnly(cfg ign35types.Config) error {
	for i, u := range cfg.Passwd.Users {
		if u.Name != coreUser {
			return fmt.Errorf("passwd.users[%d].name: user %q is not supported: MCO's daemon applies a config only when every user is %q (ignition passwd user section contains unsupported changes: non-core user)", i, u.Name, coreUser)
		}
	}
	return nil
}

// validateConfig is MCO's ValidateIgnition for a parsed config: an empty
// config is valid; otherwise Ignition's validation, then file modes, which
// may not carry setuid, setgid or sticky bits.
func validateConfig(cfg ign35types.Config) error {
	if reflect.DeepEqual(cfg, ign35types.Config{}) {
		return nil
	}
	if rpt := validate.ValidateWithContext(cfg, nil); rpt.IsFatal() {
		return fmt.Errorf("invalid Ignition config%s", ReportSuffix(rpt.String()))
	}
	for i, f := range cfg.Storage.Files {
		if f.Mode != nil && os.FileMode(*f.Mode) > os.ModePerm { //nolint:gosec // modes are small
			return fmt.Errorf("storage.files[%d] (%s): mode %#o exceeds %#o: setuid, setgid and sticky bits are not allowed", i, f.Path, *f.Mode, os.ModePerm)
		}
	}
	return nil
}

// marshalConfig encodes a config the way MCO stores it: with
// github.com/clarketm/json, whose omitempty also drops empty structs. The
// bytes feed the rendered name's hash, so encoding/json would not do.
func marshalConfig(cfg ign35types.Config) ([]byte, error) {
	return json.Marshal(cfg)
}
