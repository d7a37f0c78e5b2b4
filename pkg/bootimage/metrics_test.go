package bootimage

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"
)

// TestMetricsAndAlerts writes the metrics file, parses it with Prometheus'
// own text parser, and checks every metric the alert rules use exists.
func TestMetricsAndAlerts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.prom")
	rep := &Report{Patched: []Outcome{{Name: "a"}, {Name: "b"}}, Skipped: []Outcome{{Name: "c"}}, Errors: []Outcome{{Name: "d"}}}
	if err := WriteMetrics(path, rep, true, operatorv1.BootImageSkewEnforcementModeStatusNone, 1.7e9); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatal(err)
	}
	value := func(name, state string) float64 {
		for _, m := range fams[name].GetMetric() {
			if state == "" || (len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == state) {
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("no %s{%s}", name, state)
		return 0
	}
	if value(MetricMachineSets, "patched") != 2 || value(MetricMachineSets, "degraded") != 1 || value(MetricDegraded, "") != 1 || value(MetricSkewNone, "") != 1 {
		t.Errorf("metrics: %v", fams)
	}

	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert string `json:"alert"`
					Expr  string `json:"expr"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	b, err := os.ReadFile("../../config/bootimages/prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	metric := regexp.MustCompile(`kiln_[a-z_]+`)
	n := 0
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, m := range metric.FindAllString(r.Expr, -1) {
				n++
				if _, ok := fams[m]; !ok {
					t.Errorf("alert %s uses %s, which the stage does not write", r.Alert, m)
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("alert rules reference %d metrics, want 2", n)
	}
}

func TestSkewMode(t *testing.T) {
	mc := &operatorv1.MachineConfiguration{}
	if skewMode(mc) != "" {
		t.Error("empty")
	}
	mc.Spec.BootImageSkewEnforcement.Mode = operatorv1.BootImageSkewEnforcementConfigModeNone
	if skewMode(mc) != operatorv1.BootImageSkewEnforcementModeStatusNone {
		t.Error("spec None")
	}
	mc.Status.BootImageSkewEnforcementStatus.Mode = operatorv1.BootImageSkewEnforcementModeStatusAutomatic
	if skewMode(mc) != operatorv1.BootImageSkewEnforcementModeStatusNone {
		t.Error("spec wins")
	}
	mc.Spec.BootImageSkewEnforcement.Mode = ""
	if skewMode(mc) != operatorv1.BootImageSkewEnforcementModeStatusAutomatic {
		t.Error("status without spec")
	}
}
