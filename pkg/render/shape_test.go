package render

import (
	"fmt"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/ignres"
	"github.com/kiln-dev/kiln/test/env"
)

// TestRenderRefusesNestedKeyBomb renders the nested-key bomb (three
// unknown keys nested 9,000 deep, 162 KB) as an MC's own config and as a
// config it references over HTTP: both are refused before Ignition parses
// them, naming the MachineConfig, the field and the depth rule, and the MC's
// own as rejected input.
func TestRenderRefusesNestedKeyBomb(t *testing.T) {
	bomb := env.NestedKeyBomb(3, 9000)
	t.Run("spec.config", func(t *testing.T) {
		res, err := renderOne(t, bomb)
		wantRefused(t, res, err, "spec.config: JSON nests more than 16 levels deep")
		if exitcode.CodeOf(err) != exitcode.ExitInputRejected {
			t.Errorf("error is not marked as rejected input: %v", err)
		}
	})
	t.Run("referenced config", func(t *testing.T) {
		srv, _ := serve(t, map[string][]byte{"bomb.ign": []byte(bomb)})
		res, err := renderOne(t, fmt.Sprintf(`{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"%s/bomb.ign"}]}}}`, srv.URL))
		wantRefused(t, res, err, "spec.config.ignition.config.merge[0]", srv.URL+"/bomb.ign", "JSON nests more than 16 levels deep")
	})
}

// TestRenderAcceptsConfigsAtTheShapeCaps renders configs at the depth and
// value caps: an unknown key nested to the depth cap, and the widest config
// (widestConfig) are accepted, as Ignition accepts them.
func TestRenderAcceptsConfigsAtTheShapeCaps(t *testing.T) {
	// The document is level 1, the key's value fills the rest.
	for name, raw := range map[string]string{
		"deepest": env.NestedKeyBomb(1, ignres.MaxDepth-1),
		"widest":  widestConfig(),
	} {
		t.Run(name, func(t *testing.T) {
			if err := ignres.CheckShape([]byte(raw)); err != nil {
				t.Fatalf("the test's config is over the caps: %v", err)
			}
			if _, err := renderOne(t, raw); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

// widestConfig is the costliest config to parse that CheckShape accepts:
// unknown keys nested to the depth cap, as many as MaxValues allows. Each
// key holds MaxDepth-1 objects, so it counts 2*(MaxDepth-1)+2 values (its
// name, the objects, their keys and the innermost number).
func widestConfig() string {
	perKey := 2*(ignres.MaxDepth-1) + 2
	keys := (ignres.MaxValues - 6) / perKey // the document, "ignition", its object, "version" and its value
	return env.NestedKeyBomb(keys, ignres.MaxDepth-1)
}
