package bootimage

import (
	"fmt"

	operatorv1 "github.com/openshift/api/operator/v1"
	"github.com/prometheus/client_golang/prometheus"
)

// Metric names; config/bootimages/prometheusrule.yaml alerts on them.
const (
	MetricMachineSets  = "kiln_bootimage_machinesets"
	MetricDegraded     = "kiln_bootimage_update_degraded"
	MetricSkewNone     = "kiln_bootimage_skew_enforcement_none"
	MetricLastPassTime = "kiln_bootimage_last_pass_timestamp_seconds"
)

// WriteMetrics writes the pass's metrics in Prometheus text format to path.
// A one-shot stage has no /metrics endpoint: the file is picked up by the
// node-exporter textfile collector or the trigger controller, which serves
// the last report of each run.
func WriteMetrics(path string, rep *Report, failed bool, skew operatorv1.BootImageSkewEnforcementModeStatus, now float64) error {
	reg := prometheus.NewRegistry()
	sets := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: MetricMachineSets,
		Help: "Machine API and Cluster API MachineSets of the last boot image pass, by outcome."}, []string{"state"})
	degraded := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricDegraded,
		Help: "1 when the last boot image pass set BootImageUpdateDegraded."})
	skewNone := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricSkewNone,
		Help: "1 when boot image skew enforcement is None (scale-up may boot old images)."})
	last := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricLastPassTime,
		Help: "Unix time of the last boot image pass."})
	reg.MustRegister(sets, degraded, skewNone, last)
	// Machine API and Cluster API MachineSets alike: each one counts once.
	capi := &CAPIReport{}
	if rep.CAPI != nil {
		capi = rep.CAPI
	}
	sets.WithLabelValues("patched").Set(float64(len(rep.Patched) + len(capi.Patched)))
	sets.WithLabelValues("uptodate").Set(float64(len(rep.UpToDate) + len(capi.UpToDate)))
	sets.WithLabelValues("skipped").Set(float64(len(rep.Skipped) + len(capi.Skipped)))
	sets.WithLabelValues("degraded").Set(float64(len(rep.Errors) + len(capi.Errors)))
	if failed {
		degraded.Set(1)
	}
	if skew == operatorv1.BootImageSkewEnforcementModeStatusNone {
		skewNone.Set(1)
	}
	last.Set(now)
	if err := prometheus.WriteToTextfile(path, reg); err != nil {
		return fmt.Errorf("writing metrics: %w", err)
	}
	return nil
}

// skewMode is the cluster's skew enforcement mode: the admin's spec wins
// (as in MCO's operator, which derives the status from it), else the status
// the operator computed from platform defaults. Served by the
// TechPreview/CustomNoUpgrade MachineConfiguration CRD only; the Default CRD
// prunes both fields, and the mode is then unknown ("").
func skewMode(mc *operatorv1.MachineConfiguration) operatorv1.BootImageSkewEnforcementModeStatus {
	switch mc.Spec.BootImageSkewEnforcement.Mode {
	case operatorv1.BootImageSkewEnforcementConfigModeNone:
		return operatorv1.BootImageSkewEnforcementModeStatusNone
	case operatorv1.BootImageSkewEnforcementConfigModeManual:
		return operatorv1.BootImageSkewEnforcementModeStatusManual
	}
	return mc.Status.BootImageSkewEnforcementStatus.Mode
}
