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
)

func init() {
	metrics.Registry.MustRegister(metricCreated, metricCancelled, metricReverts, metricErrors)
}
