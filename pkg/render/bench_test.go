package render

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	ign35 "github.com/coreos/ignition/v2/config/v3_5"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%04d-bench", i), Labels: map[string]string{RoleLabel: "worker"}},
			Spec:       mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(raw)}, KernelArguments: []string{fmt.Sprintf("k%d=1", i)}},
		}
	}
	return out
}

// parseOnlyNs is the reference: Ignition's own parse of every MC, the
// least any renderer must do; the best of a few rounds, in ns.
func parseOnlyNs(b *testing.B, mcs []*mcfgv1.MachineConfig) float64 {
	best := time.Duration(math.MaxInt64)
	for round := 0; round < 5; round++ {
		start := time.Now()
		for _, mc := range mcs {
			if _, _, err := ign35.ParseCompatibleVersion(mc.Spec.Config.Raw); err != nil {
				b.Fatal(err)
			}
		}
		best = min(best, time.Since(start))
	}
	return float64(best.Nanoseconds())
}

// BenchmarkRender1000MCs renders 1000 MCs holding 10,000 files and reports
// the ratio against Ignition-parse-only of the same MCs, measured in the
// same run.
func BenchmarkRender1000MCs(b *testing.B) {
	mcs := benchConfigs(1000, 10)
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "worker"},
		Spec: mcfgv1.MachineConfigPoolSpec{MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RoleLabel: "worker"}}}}
	ref := parseOnlyNs(b, mcs)
	req := Request{Pool: pool, Configs: mcs, Fetcher: &Fetcher{Client: closedClient}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := Render(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Inputs) != 1000 {
			b.Fatalf("%d inputs", len(res.Inputs))
		}
	}
	b.StopTimer()
	ours := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ref, "ref-ns/op")
	b.ReportMetric(ours/ref, "x-parse-only")
}
