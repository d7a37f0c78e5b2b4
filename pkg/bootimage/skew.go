package bootimage

import (
	"fmt"
	"strconv"
	"strings"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kiln-dev/kiln/pkg/work"
)

// ConditionUpgradeable is set False on MachineConfiguration when the
// cluster's boot images are older than the skew limit (the boot image enhancement,
// "Enforcement of bootimage skew"). MCO sets Upgradeable on its
// ClusterOperator; kiln has none, so the condition lives next to the boot
// image conditions and carries the same remediation.
const ConditionUpgradeable = "Upgradeable"

// SkewLimits are the oldest boot images a release accepts. The enhancement wants
// the release payload to carry them; until it does they are flags, with
// MCO's current values as defaults.
type SkewLimits struct {
	OCP   string // e.g. "4.13.0"
	RHCOS string // e.g. "9.2"
}

// DefaultSkewLimits are MCO's limits at the time of writing.
var DefaultSkewLimits = SkewLimits{OCP: "4.13.0", RHCOS: "9.2"}

// Skew is the outcome of skew enforcement for one pass, part of Report.
type Skew = work.Skew

// evaluateSkew applies the three modes:
//   - Automatic: kiln manages the boot images, so after a pass with no skip
//     and no error the cluster's boot image is the ConfigMap's release; a
//     skip makes the record untrustworthy, so it falls back to the install
//     version (as MCO does); an error leaves it alone;
//   - Manual: the admin's declared boot image version is checked;
//   - None: nothing is enforced (the skew-None alert fires instead).
func evaluateSkew(mc *operatorv1.MachineConfiguration, rep *Report, failed bool, cmRelease string, cv *configv1.ClusterVersion, limits SkewLimits) Skew {
	st := mc.Status.BootImageSkewEnforcementStatus
	s := Skew{Mode: skewMode(mc)}
	var ocp, rhcos string
	switch s.Mode {
	case operatorv1.BootImageSkewEnforcementModeStatusAutomatic:
		auto := st.Automatic
		switch {
		case failed:
		case len(rep.Skipped) == 0 && cmRelease != "":
			auto = operatorv1.ClusterBootImageAutomatic{OCPVersion: semver3(cmRelease)}
		case len(rep.Skipped) > 0:
			auto = operatorv1.ClusterBootImageAutomatic{OCPVersion: installVersion(cv)}
		}
		if auto != st.Automatic {
			s.Automatic = &auto
		}
		ocp, rhcos = auto.OCPVersion, auto.RHCOSVersion
	case operatorv1.BootImageSkewEnforcementModeStatusManual:
		m := st.Manual
		if m == (operatorv1.ClusterBootImageManual{}) {
			m = mc.Spec.BootImageSkewEnforcement.Manual
		}
		ocp, rhcos = m.OCPVersion, m.RHCOSVersion
	default:
		return s
	}
	s.Exceeded, s.Message = checkSkew(ocp, rhcos, limits)
	return s
}

func checkSkew(ocp, rhcos string, limits SkewLimits) (bool, string) {
	switch {
	case ocp != "":
		v, err := version.ParseGeneric(ocp)
		min := version.MustParseGeneric(limits.OCP)
		if err != nil {
			return true, fmt.Sprintf("the cluster boot image version %q is not an OCP version", ocp)
		}
		if v.LessThan(min) {
			return true, fmt.Sprintf("the cluster's boot images are from OCP %s, older than the oldest supported %s", ocp, limits.OCP)
		}
	case rhcos != "":
		mm, err := rhelMajorMinor(rhcos)
		if err != nil {
			return true, err.Error()
		}
		if mm.LessThan(version.MustParseGeneric(limits.RHCOS)) {
			return true, fmt.Sprintf("the cluster's boot images are RHCOS %s (RHEL %s), older than the oldest supported RHEL %s", rhcos, mm, limits.RHCOS)
		}
	}
	return false, ""
}

// rhelMajorMinor reads the RHEL major.minor of an RHCOS version: "9.6.x"
// directly, legacy "418.94.x" from its second field (9.4).
func rhelMajorMinor(v string) (*version.Version, error) {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("the cluster boot image version %q is not an RHCOS version", v)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil {
		return nil, fmt.Errorf("the cluster boot image version %q is not an RHCOS version", v)
	}
	if major >= 100 && len(parts[1]) >= 2 {
		return version.ParseGeneric(parts[1][:1] + "." + parts[1][1:])
	}
	return version.ParseGeneric(parts[0] + "." + parts[1])
}

func semver3(v string) string {
	p, err := version.ParseGeneric(v)
	if err != nil {
		return v
	}
	return fmt.Sprintf("%d.%d.%d", p.Major(), p.Minor(), p.Patch())
}

// installVersion is the oldest Completed release in ClusterVersion history,
// "0.0.0" when unknown (so the check errs on the safe side, as MCO does).
func installVersion(cv *configv1.ClusterVersion) string {
	if cv == nil {
		return "0.0.0"
	}
	h := cv.Status.History
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].State == configv1.CompletedUpdate {
			return semver3(h[i].Version)
		}
	}
	return "0.0.0"
}

// upgradeableCondition turns a skew outcome into the condition, or nil when
// skew is not enforced.
func upgradeableCondition(s Skew) *metav1.Condition {
	if s.Mode != operatorv1.BootImageSkewEnforcementModeStatusAutomatic && s.Mode != operatorv1.BootImageSkewEnforcementModeStatusManual {
		return nil
	}
	if !s.Exceeded {
		return &metav1.Condition{Type: ConditionUpgradeable, Status: metav1.ConditionTrue, Reason: "BootImageSkewWithinLimit",
			Message: "Boot images are within the supported skew"}
	}
	return &metav1.Condition{Type: ConditionUpgradeable, Status: metav1.ConditionFalse, Reason: "BootImageSkewLimitExceeded",
		Message: fmt.Sprintf("Upgrades are blocked because %s. To remediate: opt the MachineSets in to boot image updates "+
			"(spec.managedBootImages, mode All) on a MachineSet-backed cluster; or update the boot images manually "+
			"(pkg/bootimage/README.md) and record the new version in spec.bootImageSkewEnforcement.manual; "+
			"or set spec.bootImageSkewEnforcement.mode to None, giving up safe scale-up", s.Message)}
}
