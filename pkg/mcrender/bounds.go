package mcrender

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/kiln-dev/kiln/pkg/ignres"
)

// checkContent measures the merged config's files, appends and CAs once
// decompressed, against ignres.MaxContent: image-build writes them into
// the image and must hold them, so render refuses what image-build would.
// It stops at the limit, so a bomb is never inflated further.
func checkContent(cfg ign35types.Config, ps []parsed) error {
	lim := ignres.ContentLimit()
	measure := func(r ign35types.Resource, where, path string) error {
		if r.Source == nil || !strings.HasPrefix(*r.Source, "data:") {
			return nil
		}
		raw, err := ignres.DataURL(*r.Source)
		if err == nil {
			_, err = ignres.Copy(io.Discard, bytes.NewReader(raw), r, lim)
		}
		if err != nil {
			return fmt.Errorf("rendered config: %s%s: %w", where, setBy(ps, path), err)
		}
		return nil
	}
	for i, ca := range cfg.Ignition.Security.TLS.CertificateAuthorities {
		if err := measure(ca, fmt.Sprintf("ignition.security.tls.certificateAuthorities[%d]", i), ""); err != nil {
			return err
		}
	}
	for i, f := range cfg.Storage.Files {
		at := fmt.Sprintf("storage.files[%d] (%s)", i, f.Path)
		if err := measure(f.Contents, at+" contents", f.Path); err != nil {
			return err
		}
		for j, a := range f.Append {
			if err := measure(a, fmt.Sprintf("%s append[%d]", at, j), f.Path); err != nil {
				return err
			}
		}
	}
	return nil
}

// setBy names the last input MC that writes path, for errors about the
// merged config.
func setBy(ps []parsed, path string) string {
	if path == "" {
		return ""
	}
	for i := len(ps) - 1; i >= 0; i-- {
		for _, f := range ps[i].cfg.Storage.Files {
			if f.Path == path {
				return fmt.Sprintf(" (from MachineConfig %q)", ps[i].mc.Name)
			}
		}
	}
	return ""
}
