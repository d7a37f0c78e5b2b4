package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleWithNothingToSignRefused: in directory mode, where no
// apiserver holds the ModuleDay0 to its schema, a sign section whose
// filesToSign is empty is refused when the pool's module is chosen (render
// and the trigger both choose it there), naming the ModuleDay0 and the
// field.
func TestModuleWithNothingToSignRefused(t *testing.T) {
	cases := []struct{ name, files, want string }{
		{"empty list", "[]", "ModuleDay0 kmm/realtime-kmod: spec.osMapping.sign.filesToSign: empty"},
		{"relative path", "[lib/modules/a.ko]", `ModuleDay0 kmm/realtime-kmod: spec.osMapping.sign.filesToSign[0] "lib/modules/a.ko": not an absolute path`},
		{"other placeholder", "['/opt/${KERNEL_VERSION}/a.ko']", `spec.osMapping.sign.filesToSign[0] "/opt/${KERNEL_VERSION}/a.ko": only ${KERNEL_FULL_VERSION} may be substituted`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pools, err := os.ReadFile(filepath.Join("testdata", "bad", "mc-without-labels", "pools.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			md := `apiVersion: kmm.sigs.x-k8s.io/v1beta1
kind: ModuleDay0
metadata: {name: realtime-kmod, namespace: kmm}
spec:
  machineConfigPoolSelector: {node-role.kubernetes.io/worker: ""}
  osMapping:
    containerImage: quay.io/example/os:kmod
    sign:
      unsignedImage: quay.io/example/os:unsigned
      certSecret: {name: cert}
      keySecret: {name: key}
      filesToSign: ` + c.files + "\n"
			if err := os.WriteFile(filepath.Join(dir, "pools.yaml"), pools, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "kmod.yaml"), []byte(md), 0o644); err != nil {
				t.Fatal(err)
			}
			objs, err := LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			pool, err := objs.Pool("worker")
			if err != nil {
				t.Fatal(err)
			}
			m, err := objs.Module(pool)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("module %v error %v, want %q", m, err, c.want)
			}
		})
	}
}
