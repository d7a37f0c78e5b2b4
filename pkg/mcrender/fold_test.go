package mcrender

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/manifests"
)

// stageCases are the render stage's golden and bad cases: the
// MachineConfigs of every shape its tests render, read here as inputs of
// the engine.
const stageCases = "../render/testdata"

// caseConfigs reads the MachineConfigs of one case folder as the render
// stage loads them (pkg/manifests).
func caseConfigs(dir string) ([]*mcfgv1.MachineConfig, error) {
	var mcs []*mcfgv1.MachineConfig
	err := manifests.Walk(dir, func(obj runtime.Object) error {
		if mc, ok := obj.(*mcfgv1.MachineConfig); ok {
			mcs = append(mcs, mc)
		}
		return nil
	})
	return mcs, err
}

// usesServer reports whether a case refers to the stage's test server
// ({{URL}}), whose configs are not Ignition until it is filled in.
func usesServer(t testing.TB, dir string) bool {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), "{{URL}}") {
			return true
		}
	}
	return false
}

func mustParse(t testing.TB, raw string) ign35types.Config {
	t.Helper()
	c, err := parseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func sameJSON(t testing.TB, a, b ign35types.Config) bool {
	t.Helper()
	ja, err1 := marshalConfig(a)
	jb, err2 := marshalConfig(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(ja) == string(jb)
}

// TestFoldTreeEqualsLinear: the balanced merge gives MCO's left fold's
// result on every golden case and on a larger mix that overrides files,
// compression, units, dropins and SSH keys; and fold falls back to the left
// fold where the merge is not associative.
func TestFoldTreeEqualsLinear(t *testing.T) {
	var sets [][]ign35types.Config
	cases, _ := os.ReadDir(filepath.Join(stageCases, "golden"))
	for _, c := range cases {
		dir := filepath.Join(stageCases, "golden", c.Name())
		mcs, err := caseConfigs(dir)
		if err != nil {
			t.Fatal(err)
		}
		var set []ign35types.Config
		for _, mc := range mcs {
			if cfg, err := parseConfig(mc.Spec.Config.Raw); err == nil && len(mc.Spec.Config.Raw) > 0 && !usesServer(t, dir) {
				set = append(set, cfg)
			}
		}
		if len(set) > 1 {
			sets = append(sets, set)
		}
	}
	var mix []ign35types.Config
	for i := 0; i < 40; i++ {
		comp := ""
		if i%3 == 0 {
			comp = `,"compression":"gzip"`
		}
		mix = append(mix, mustParse(t, fmt.Sprintf(`{"ignition":{"version":"3.5.0"},
			"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["a-%d","b-%d"]}]},
			"storage":{"files":[{"path":"/etc/f%d","contents":{"source":"data:,%d"%s}},{"path":"/etc/shared","mode":%d,"contents":{"source":"data:,%d"%s}}],
			           "directories":[{"path":"/var/d%d"}]},
			"systemd":{"units":[{"name":"u%d.service","enabled":%t,"dropins":[{"name":"d%d.conf","contents":"x"}]},{"name":"shared.service","dropins":[{"name":"d%d.conf","contents":"%d"}]}]}}`,
			i%7, i%5, i%11, i, comp, 256+i%3, i, comp, i%4, i%6, i%2 == 0, i%3, i%4, i)))
	}
	sets = append(sets, mix)
	for n, set := range sets {
		if !associative(set) {
			continue
		}
		if !sameJSON(t, foldLinear(set[0], set[1:]), mergeStep(set[0], foldTree(set[1:]))) {
			t.Errorf("set %d (%d configs): tree merge differs from the left fold", n, len(set))
		}
	}
	// A path that is a file in one config and a directory in another.
	cross := []ign35types.Config{
		mustParse(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/x","mode":384}]}}`),
		mustParse(t, `{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/x"}]}}`),
		mustParse(t, `{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,c"}}]}}`),
	}
	if associative(cross) {
		t.Fatal("a file/directory path clash counts as associative")
	}
	if !sameJSON(t, fold(cross[0], cross[1:]), foldLinear(cross[0], cross[1:])) {
		t.Error("fold did not fall back to the left fold")
	}
	if sameJSON(t, foldLinear(cross[0], cross[1:]), mergeStep(cross[0], foldTree(cross[1:]))) {
		t.Error("the clash case no longer shows why the fallback exists")
	}
}
