package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// TestModuleWithNothingToSignRefused: in directory mode a sign section
// whose filesToSign is empty or not absolute is refused, naming the
// ModuleDay0 and the field: by the folder reader with the apiserver's own
// message where the CRD's schema refuses it, else when the pool's module
// is chosen (render and the trigger both choose it there).
func TestModuleWithNothingToSignRefused(t *testing.T) {
	cases := []struct{ name, files, want string }{
		{"empty list", "[]", "ModuleDay0 kmm/realtime-kmod: spec.osMapping.sign.filesToSign: Invalid value: 0: spec.osMapping.sign.filesToSign in body should have at least 1 items"},
		{"relative path", "[lib/modules/a.ko]", `ModuleDay0 kmm/realtime-kmod: spec.osMapping.sign.filesToSign[0]: Invalid value: "string": filesToSign entries must be absolute paths`},
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
			objs, err := mcrender.LoadDir(dir)
			if err == nil {
				pool, perr := objs.Pool("worker")
				if perr != nil {
					t.Fatal(perr)
				}
				_, err = objs.Module(pool)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
