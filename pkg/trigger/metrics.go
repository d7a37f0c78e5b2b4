package trigger

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Metrics the PrometheusRule in config/ alerts on.
var (
	metricCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kiln_trigger_runs_created_total", Help: "PipelineRuns the trigger created, by pool and trigger.",
	}, []string{"pool", "trigger"})
	metricCancelled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kiln_trigger_runs_cancelled_total", Help: "PipelineRuns the trigger cancelled because inputs changed.",
	}, []string{"pool"})
	metricReverts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kiln_trigger_reverts_total", Help: "Pools reverted to the payload's OS.",
	}, []string{"pool"})
	metricErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kiln_trigger_errors_total", Help: "Pool reconciles that stopped on an error, by reason.",
	}, []string{"reason"})
	// metricDrift counts finished runs whose rollout drift gate found MCO's
	// rendered config different from kiln's prediction (drift.go).
	metricDrift = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kiln_rollout_drift_total", Help: "Rollouts whose drift gate found MCO's rendered config different from kiln's prediction, by pool.",
	}, []string{"pool"})
)

func init() {
	metrics.Registry.MustRegister(metricCreated, metricCancelled, metricReverts, metricErrors, metricDrift)
}
