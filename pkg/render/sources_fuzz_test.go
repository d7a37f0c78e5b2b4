package render

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// FuzzRenderWithSources feeds two arbitrary Ignition configs (as two MCs
// of a pool) through the engine with the stage's Fetcher as its Sources,
// so the snapshot's checks of data: and remote sources (hashes,
// compression, config references) see them too. It must never panic, an
// accepted pair must render to the same name twice, and nothing may reach
// the network: remote sources go to a Fetcher whose client cannot dial.
func FuzzRenderWithSources(f *testing.F) {
	for _, dir := range []string{"testdata/golden", "testdata/bad"} {
		cases, _ := os.ReadDir(dir)
		for _, c := range cases {
			objs, err := mcrender.LoadDir(filepath.Join(dir, c.Name()))
			if err != nil || len(objs.Configs) < 2 {
				continue
			}
			f.Add([]byte(objs.Configs[0].Spec.Config.Raw), []byte(objs.Configs[len(objs.Configs)-1].Spec.Config.Raw))
		}
	}
	// Hashed and compressed data: sources (right hash over the inflated
	// "hello", then a wrong one on a data: merge reference).
	f.Add([]byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/a","contents":{"source":"data:;base64,H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA==","compression":"gzip","verification":{"hash":"sha256-2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}}}]}}`),
		[]byte(`{"ignition":{"version":"3.5.0","config":{"merge":[{"source":"data:,%7B%22ignition%22%3A%7B%22version%22%3A%223.5.0%22%7D%7D","verification":{"hash":"sha256-`+strings.Repeat("0", 64)+`"}}]}}}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		mk := func(name string, raw []byte) *mcfgv1.MachineConfig {
			return &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcrender.RoleLabel: "worker"}},
				Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: raw}}}
		}
		req := mcrender.Request{Pool: workerPool(), Configs: []*mcfgv1.MachineConfig{mk("00-a", a), mk("01-b", b)},
			Sources: &Fetcher{Attempts: 1, Timeout: 50e6, Client: closedClient}}
		first, err := mcrender.Render(context.Background(), req)
		if err != nil {
			return
		}
		second, err := mcrender.Render(context.Background(), req)
		if err != nil {
			t.Fatalf("second render failed after the first succeeded: %v", err)
		}
		if first.Config.Name != second.Config.Name {
			t.Fatalf("rendering twice gave %s and %s", first.Config.Name, second.Config.Name)
		}
	})
}
