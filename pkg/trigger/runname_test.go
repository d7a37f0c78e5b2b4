package trigger

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Two pools whose long names share the part a run name keeps get two run
// names (so two run folders in local mode); names that fit are as before.
func TestRunNamesOfLongPoolsSharingAPrefixDiffer(t *testing.T) {
	sum := "0123456789abcdef0123456789abcdef"
	prefix := strings.Repeat("a", 60)
	a, b := RunName(prefix+"-infra", TriggerMachineConfig, sum), RunName(prefix+"-gpu", TriggerMachineConfig, sum)
	if a == b {
		t.Fatalf("pools %s-infra and %s-gpu share run name %s", prefix, prefix, a)
	}
	for _, n := range []string{a, b, RunName(strings.Repeat("b", 253), TriggerMachineConfig, sum), RunName(strings.Repeat("c.", 60)+"d", "payload", sum)} {
		if errs := validation.IsValidLabelValue(n); len(errs) > 0 || len(n) > maxRunName {
			t.Errorf("run name %q (%d characters): %v", n, len(n), errs)
		}
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			t.Errorf("run name %q: %v", n, errs)
		}
	}
	unchanged := map[string]string{
		RunName("worker", TriggerMachineConfig, sum):                "kiln-worker-" + TriggerMachineConfig + "-0123456789",
		RunName(strings.Repeat("w", 40), TriggerMachineConfig, sum): "kiln-" + strings.Repeat("w", 40) + "-0123456789",
	}
	for got, want := range unchanged {
		if got != want {
			t.Errorf("run name %q, want %q as before", got, want)
		}
	}
}
