package trigger

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	knativeapis "knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/rollout"
	"github.com/kiln-dev/kiln/test/env"
)

// TestDriftGateConfig: kiln-config's driftGate, one mode for all pools or
// one per pool, becomes the run's drift-gate param.
func TestDriftGateConfig(t *testing.T) {
	cm := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigName, Namespace: "kiln"},
			Data: map[string]string{"repository": "r.example/os-{pool}", "driftGate": v}}
	}
	param := func(c Config, pool string) string {
		for _, p := range BuildRun(c, RunSpec{Namespace: "kiln", Pool: pool, Fingerprint: Fingerprint{Sum: strings.Repeat("a", 64)}}).Spec.Params {
			if p.Name == "drift-gate" {
				return p.Value.StringVal
			}
		}
		return "(unset)"
	}
	for _, tc := range []struct {
		value string
		want  map[string]string
	}{
		{"warn", map[string]string{"worker": "warn", "infra": "warn"}},
		{"\"*\": enforce\ninfra: off\n", map[string]string{"worker": "enforce", "infra": "off"}},
		{"infra: warn\n", map[string]string{"worker": "(unset)", "infra": "warn"}},
		{"", map[string]string{"worker": "(unset)"}},
	} {
		c, err := ParseConfig(cm(tc.value))
		if err != nil {
			t.Fatalf("%q: %v", tc.value, err)
		}
		for pool, want := range tc.want {
			if got := param(c, pool); got != want {
				t.Errorf("driftGate %q: pool %s gets drift-gate %s, want %s", tc.value, pool, got, want)
			}
		}
	}
	for value, want := range map[string]string{
		"maybe":          `data.driftGate: want enforce, warn or off, or a map`,
		"infra: maybe\n": `data.driftGate: pool "infra": drift gate "maybe": want enforce, warn or off`,
	} {
		if _, err := ParseConfig(cm(value)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("driftGate %q: error %v, want %q", value, err, want)
		}
	}
}

// TestCountDrift: each finished run whose drift gate found a drift counts
// once in kiln_rollout_drift_total, across reconciles (real apiserver).
func TestCountDrift(t *testing.T) {
	k := env.StartKube(t)
	ctx := context.Background()
	if err := k.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	run := func(name string, done bool, results map[string]string) *pipelinev1.PipelineRun {
		r := &pipelinev1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: pipelinev1.PipelineRunSpec{PipelineRef: &pipelinev1.PipelineRef{Name: "kiln-node-image"}}}
		if err := k.Client.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		for _, n := range slices.Sorted(maps.Keys(results)) {
			r.Status.Results = append(r.Status.Results, pipelinev1.PipelineRunResult{Name: n, Value: *pipelinev1.NewStructuredValues(results[n])})
		}
		if done {
			r.Status.Conditions = duckv1.Conditions{{Type: knativeapis.ConditionSucceeded, Status: corev1.ConditionFalse}}
		}
		if err := k.Client.Status().Update(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	runs := []*pipelinev1.PipelineRun{
		run("enforced", true, map[string]string{"ROLLOUT_STATE": "DriftDetected", "DRIFT_GATE": "Drift"}),
		run("warned", true, map[string]string{"ROLLOUT_STATE": "Succeeded", "DRIFT_GATE": "Drift"}),
		run("passed", true, map[string]string{"ROLLOUT_STATE": "Succeeded", "DRIFT_GATE": "Passed"}),
		run("running", false, map[string]string{"DRIFT_GATE": "Drift"}),
	}
	c := &Controller{Client: k.Client}
	before := driftCount(t, "driftpool")
	for range 2 {
		if err := c.countDrift(ctx, "driftpool", runs); err != nil {
			t.Fatal(err)
		}
	}
	if got := driftCount(t, "driftpool") - before; got != 2 {
		t.Errorf("counted %v drifts, want 2 (enforced and warned, once each)", got)
	}
	for _, r := range runs {
		got := &pipelinev1.PipelineRun{}
		if err := k.Client.Get(ctx, client.ObjectKeyFromObject(r), got); err != nil {
			t.Fatal(err)
		}
		if marked := got.Annotations[AnnotDriftCounted] == "true"; marked != (r.Name == "enforced" || r.Name == "warned") {
			t.Errorf("run %s marked %v", r.Name, marked)
		}
	}
}

func driftCount(t *testing.T, pool string) float64 {
	t.Helper()
	var m dto.Metric
	if err := metricDrift.WithLabelValues(pool).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// TestAlertsUseTriggerMetrics: every kiln_ metric the trigger's
// PrometheusRule alerts on is one the trigger exports, drift included.
func TestAlertsUseTriggerMetrics(t *testing.T) {
	names := map[string]bool{}
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range []prometheus.Collector{metricCreated, metricCancelled, metricReverts, metricErrors, metricDrift, metricUpgradeReady} {
		ch := make(chan *prometheus.Desc, 4)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			if m := fq.FindStringSubmatch(d.String()); m != nil {
				names[m[1]] = true
			}
		}
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
	b, err := os.ReadFile(filepath.Join(env.RepoRoot(), "config", "manager", "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rule); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			for _, m := range regexp.MustCompile(`kiln_[a-z_]+`).FindAllString(r.Expr, -1) {
				if !names[m] {
					t.Errorf("alert %s uses %s, which the trigger does not export", r.Alert, m)
				}
				found = found || (m == "kiln_rollout_drift_total" && r.Alert == "KilnRolloutDrift")
			}
		}
	}
	if !found {
		t.Error("no KilnRolloutDrift alert on kiln_rollout_drift_total")
	}
}

// FuzzParseDriftGate: whatever driftGate holds, an accepted value gives
// every pool a valid mode or none.
func FuzzParseDriftGate(f *testing.F) {
	for _, s := range []string{"warn", "off", "\"*\": enforce\ninfra: off\n", "infra: true", "- a", "{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		m, err := parseDriftGate(v)
		if err != nil {
			return
		}
		c := Config{DriftGate: m}
		for _, pool := range []string{"worker", "infra", "*"} {
			if mode := c.DriftGateFor(pool); mode != "" && rollout.ValidDriftGate(mode) != nil {
				t.Fatalf("driftGate %q gives pool %s mode %q", v, pool, mode)
			}
		}
	})
}
