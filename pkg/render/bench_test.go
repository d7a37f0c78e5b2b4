package render

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kiln-dev/kiln/pkg/mcrender"
)

// closedClient fails every request at once: nothing in these tests may
// fetch from the network unless a case asks for it.
var closedClient = &http.Client{Transport: &http.Transport{DialContext: func(context.Context, string, string) (net.Conn, error) {
	return nil, fmt.Errorf("network disabled in this test")
}}}

// benchConfigs makes n worker MCs holding files files each (every MC also
// rewrites one shared file, so the merge overrides as well as appends).
func benchConfigs(n, files int) []*mcfgv1.MachineConfig {
	out := make([]*mcfgv1.MachineConfig, n)
	for i := range out {
		var fs []string
		for j := 0; j < files-1; j++ {
			fs = append(fs, fmt.Sprintf(`{"path":"/etc/kiln/%04d/%02d.conf","mode":420,"contents":{"source":"data:,mc%%20%d%%20file%%20%d"}}`, i, j, i, j))
		}
		fs = append(fs, fmt.Sprintf(`{"path":"/etc/kiln/shared.conf","mode":420,"contents":{"source":"data:,from%%20%d"}}`, i))
		raw := `{"ignition":{"version":"3.5.0"},"storage":{"files":[` + strings.Join(fs, ",") + `]}}`
		out[i] = &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%04d-bench", i), Labels: map[string]string{mcrender.RoleLabel: "worker"}},
			Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}, KernelArguments: []string{fmt.Sprintf("k%d=1", i)}},
		}
	}
	return out
}

// parseOnly is the reference: Ignition's own parse of every MC, the least
// any renderer must do.
func parseOnly(b *testing.B, mcs []*mcfgv1.MachineConfig) time.Duration {
	start := time.Now()
	for _, mc := range mcs {
		if _, _, err := ign35.ParseCompatibleVersion(mc.Spec.Config.Raw); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// BenchmarkRender1000MCs renders 1000 MCs holding 10,000 files and reports
// the ratio against Ignition-parse-only of the same MCs, measured in the
// same loop: one parse-only pass after each render.
func BenchmarkRender1000MCs(b *testing.B) {
	mcs := benchConfigs(1000, 10)
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{mcrender.RoleLabel: "worker"}}}}
	req := mcrender.Request{Pool: pool, Configs: mcs, Sources: &Fetcher{Client: closedClient}}
	var ours, ref time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := mcrender.Render(context.Background(), req)
		ours += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Inputs) != 1000 {
			b.Fatalf("%d inputs", len(res.Inputs))
		}
		// The reference, interleaved so that both see the same load; its
		// allocations are not counted.
		b.StopTimer()
		ref += parseOnly(b, mcs)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(ref.Nanoseconds())/float64(b.N), "ref-ns/op")
	b.ReportMetric(float64(ours)/float64(ref), "x-parse-only")
}
