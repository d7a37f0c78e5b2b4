package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/mcrender"
	"github.com/kiln-dev/kiln/pkg/mcsize"
	"github.com/kiln-dev/kiln/pkg/render"
	"github.com/kiln-dev/kiln/pkg/taskresult"
	"github.com/kiln-dev/kiln/pkg/work"
)

// TestImageBuildMeasuresTheConfigAsRenderDoes renders a config just under
// MCO's size limit, made of many short fields, so that render's indented
// rendered.json holds a spec.config far over the limit; render writes it,
// image-build reads it back and plans its layer: the same measure
// (pkg/mcsize) lets both through. One byte more of file content, and
// image-build refuses it with the size MCO would report.
func TestImageBuildMeasuresTheConfigAsRenderDoes(t *testing.T) {
	const files, pad = 5300, 200
	var fs []string
	for i := 0; i < files; i++ {
		fs = append(fs, fmt.Sprintf(`{"path":"/etc/kiln/f%05d","mode":420,"overwrite":true,"contents":{"source":"data:,%s"}}`, i, strings.Repeat("a", pad)))
	}
	raw := `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + strings.Join(fs, ",") + `]}}`
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcrender.RoleLabel: "worker"}}}}
	mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "50-many-files", Labels: map[string]string{mcrender.RoleLabel: "worker"}},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}}}
	res, err := mcrender.Render(context.Background(), mcrender.Request{Pool: pool, Configs: []*mcfgv1.MachineConfig{mc}})
	if err != nil {
		t.Fatalf("render refused the config: %v", err)
	}
	ws := work.Workspace{Root: t.TempDir()}
	if err := (&render.Output{Result: res}).Write(ws, taskresult.NewResults(t.TempDir())); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRendered(ws.RenderedPath())
	if err != nil {
		t.Fatal(err)
	}
	size, err := mcsize.Measure(mcsize.FromObject(got, LabelPool))
	if err != nil {
		t.Fatal(err)
	}
	// The premise: the file's spec.config is over the limit, the config
	// as MCO measures it is just under.
	if n := len(got.Spec.Config.Raw); n <= mcsize.Max || size > mcsize.Max || size < mcsize.Max-100<<10 {
		t.Fatalf("spec.config in rendered.json is %d bytes, MCO's measure %d: want the first over %d and the second just under", n, size, mcsize.Max)
	}
	if _, err := PlanLayer(got); err != nil {
		t.Fatalf("image-build refused what render accepted: %v", err)
	}
	// Grow one file's content to one byte over the limit.
	over := mcsize.Max - size + 1
	got.Spec.Config.Raw = bytes.Replace(got.Spec.Config.Raw, []byte("data:,"), []byte("data:,"+strings.Repeat("a", over)), 1)
	_, err = PlanLayer(got)
	want := fmt.Sprintf("planning layer: rendered MachineConfig %s is too large: %d bytes, limit %d (etcd's request size)", got.Name, mcsize.Max+1, mcsize.Max)
	if err == nil || err.Error() != want {
		t.Errorf("PlanLayer of a config one byte over: %v, want %q", err, want)
	}
}
