package mcrender

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ign35types "github.com/coreos/ignition/v2/config/v3_5/types"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// FuzzRender feeds two arbitrary Ignition configs (as two MCs of a pool)
// through parsing, validation and the merge. It must never panic, an
// accepted pair must render to the same name twice (the merge may not
// mutate its inputs), and nothing may reach the network: without Sources
// remote sources stay as they are (pkg/render's FuzzRenderWithSources
// fuzzes the stage's fetcher).
func FuzzRender(f *testing.F) {
	for _, dir := range []string{filepath.Join(stageCases, "golden"), filepath.Join(stageCases, "bad")} {
		cases, _ := os.ReadDir(dir)
		for _, c := range cases {
			mcs, err := caseConfigs(filepath.Join(dir, c.Name()))
			if err != nil || len(mcs) < 2 {
				continue
			}
			f.Add([]byte(mcs[0].Spec.Config.Raw), []byte(mcs[len(mcs)-1].Spec.Config.Raw))
		}
	}
	f.Add([]byte(`{"ignition":{"version":"2.2.0"},"passwd":{"users":[{"name":"core"},{"name":"core","sshAuthorizedKeys":["k"]}]}}`), []byte(`{"ignition":{"version":"3.0.0"}}`))
	// Hashed and compressed data: sources (right hash over the inflated
	// "hello", then the compressed bytes' hash) and a data: merge reference.
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:;base64,H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA==","compression":"gzip","verification":{"hash":"sha256-2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}}}]}}`),
		[]byte(`{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"data:,%7B%22ignition%22%3A%7B%22version%22%3A%223.5.0%22%7D%7D","verification":{"hash":"sha256-`+strings.Repeat("0", 64)+`"}}]}}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
			Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "worker"}}}}
		mk := func(name string, raw []byte) *mcfgv1.MachineConfig {
			return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{RoleLabel: "worker"}},
				Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}}
		}
		req := Request{Pool: pool, Configs: []*mcfgv1.MachineConfig{mk("00-a", a), mk("01-b", b)}}
		// The balanced merge must equal MCO's left fold whenever fold uses it.
		if ca, err := parseConfig(a); err == nil {
			if cb, err := parseConfig(b); err == nil && validateConfig(ca) == nil && validateConfig(cb) == nil {
				set := []ign35types.Config{ca, cb, ca, cb, cb}
				if associative(set) && !sameJSON(t, foldLinear(set[0], set[1:]), mergeStep(set[0], foldTree(set[1:]))) {
					t.Fatal("tree merge differs from the left fold")
				}
			}
		}
		first, err := Render(context.Background(), req)
		if err != nil {
			return
		}
		second, err := Render(context.Background(), req)
		if err != nil {
			t.Fatalf("second render failed after the first succeeded: %v", err)
		}
		if first.Config.Name != second.Config.Name {
			t.Fatalf("rendering twice gave %s and %s", first.Config.Name, second.Config.Name)
		}
	})
}
