package work

import (
	"path/filepath"

	operatorv1 "github.com/openshift/api/operator/v1"
)

// Files of bootimages in bootimages/: its BootImageReport, its metrics
// in the Prometheus text format, and in folder mode the folder of the
// patched MachineSets as GitOps manifests.
const (
	BootImageReportFile   = "report.json"
	BootImageMetricsFile  = "metrics.prom"
	BootImageManifestsDir = "manifests"
)

// BootImageReportPath is bootimages/report.json.
func (w Workspace) BootImageReportPath() string {
	return filepath.Join(w.StageDir(StageBootImages), BootImageReportFile)
}

// BootImageManifestsPath is bootimages/manifests.
func (w Workspace) BootImageManifestsPath() string {
	return filepath.Join(w.StageDir(StageBootImages), BootImageManifestsDir)
}

// Outcome is what happened to one MachineSet.
type Outcome struct {
	Name   string `json:"name"`
	Reason string `json:"reason,omitempty"`
	From   string `json:"from,omitempty"`
	To     string `json:"to,omitempty"`
	// Template is the clone a Cluster API MachineSet now refers to.
	Template string `json:"template,omitempty"`
}

// BootImageReport is the result of one boot image pass.
type BootImageReport struct {
	Platform       string    `json:"platform"`
	ReleaseVersion string    `json:"releaseVersion,omitempty"`
	Enrolled       int       `json:"enrolled"`
	Patched        []Outcome `json:"patched"`
	UpToDate       []string  `json:"upToDate"`
	Skipped        []Outcome `json:"skipped"`
	Errors         []Outcome `json:"errors"`
	StubsUpgraded  []string  `json:"stubsUpgraded"`
	// SkewEnforcement is the cluster's skew enforcement mode, if known.
	SkewEnforcement operatorv1.BootImageSkewEnforcementModeStatus `json:"skewEnforcement,omitempty"`
	// Skew is the outcome of skew enforcement.
	Skew *Skew `json:"skew,omitempty"`
	// CAPI is the Cluster API part, when CAPI MachineSets are opted in.
	CAPI *CAPIReport `json:"capi,omitempty"`
}

// PatchedCount and SkippedCount add both machine APIs up (step results).
func (r *BootImageReport) PatchedCount() int {
	n := len(r.Patched)
	if r.CAPI != nil {
		n += len(r.CAPI.Patched)
	}
	return n
}

// SkippedCount: see PatchedCount.
func (r *BootImageReport) SkippedCount() int {
	n := len(r.Skipped)
	if r.CAPI != nil {
		n += len(r.CAPI.Skipped)
	}
	return n
}

// Skew is the outcome of skew enforcement for one pass.
type Skew struct {
	Mode operatorv1.BootImageSkewEnforcementModeStatus `json:"mode,omitempty"`
	// Automatic is the new automatic record when the pass changed it.
	Automatic *operatorv1.ClusterBootImageAutomatic `json:"automatic,omitempty"`
	// Exceeded says the boot images are older than the limit; Message why.
	Exceeded bool   `json:"exceeded"`
	Message  string `json:"message,omitempty"`
}

// CAPIReport is the Cluster API part of a pass.
type CAPIReport struct {
	Enrolled int       `json:"enrolled"`
	Patched  []Outcome `json:"patched"`
	UpToDate []string  `json:"upToDate"`
	Skipped  []Outcome `json:"skipped"`
	Errors   []Outcome `json:"errors"`
	// TemplatesCreated and TemplatesDeleted name templates ("Kind ns/name").
	TemplatesCreated []string `json:"templatesCreated"`
	TemplatesDeleted []string `json:"templatesDeleted"`
}
