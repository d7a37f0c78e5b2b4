package kmod

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// UpgradeFacts are what the KMM day-0 proposal's "Cluster upgrade" compares.
type UpgradeFacts struct {
	// ClusterVersion is ClusterVersion status.desired.version, e.g. 4.15.2.
	ClusterVersion string
	// PayloadOSVersion is the version of the payload's rhel-coreos image
	// (its "version" label), e.g. 9.6.20250523-0 or 415.92.202402130021-0.
	PayloadOSVersion string
	// NodeOSImages are the pool's nodes' status.nodeInfo.osImage.
	NodeOSImages []string
}

// The patterns are compiled on first use, not at the start of every
// kiln-steps subcommand.
var (
	// RHCOS before 4.19 names its OpenShift y-stream: "414.92.…" is 4.14.
	legacyRHCOS = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b4(\d{2})\.\d+\.\d{8,}`) })
	// RHCOS 4.19 and later name their RHEL release instead: "9.6.2025…".
	rhelRHCOS = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b(\d+)\.(\d+)\.\d{8,}`) })
	ocpY      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^4\.(\d+)\.`) })
)

// NeedsUpgradeRebuild implements the day-0 proposal's "Cluster upgrade": with
// clusterUpgradeTriggerNodeUpgrade, a y-stream difference between the
// cluster's desired version and a node's OS asks for a rebuild on the new
// OS_AUTO/DTK_AUTO. Nodes on RHCOS 4.19+ report a RHEL version, which says
// nothing of the OpenShift y-stream; for them the RHEL major.minor is
// compared with the payload OS's. The proposal predates that change.
func NeedsUpgradeRebuild(md *kmmv1beta1.ModuleDay0, f UpgradeFacts) (bool, string, error) {
	if !md.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade {
		return false, "clusterUpgradeTriggerNodeUpgrade is false", nil
	}
	cy := ocpY().FindStringSubmatch(f.ClusterVersion + ".")
	if cy == nil {
		return false, "", fmt.Errorf("ClusterVersion status.desired.version %q is not an OpenShift 4.y version", f.ClusterVersion)
	}
	for _, os := range f.NodeOSImages {
		if m := legacyRHCOS().FindStringSubmatch(os); m != nil {
			if strings.TrimLeft(m[1], "0") != strings.TrimLeft(cy[1], "0") {
				return true, fmt.Sprintf("nodes run %q (OpenShift 4.%s), the cluster is moving to %s", os, strings.TrimLeft(m[1], "0"), f.ClusterVersion), nil
			}
			continue
		}
		m := rhelRHCOS().FindStringSubmatch(os)
		p := rhelRHCOS().FindStringSubmatch(f.PayloadOSVersion)
		if legacy := legacyRHCOS().FindStringSubmatch(f.PayloadOSVersion); legacy != nil {
			p = nil // a legacy payload against a RHEL-versioned node is a y-stream change backwards; rebuild
		}
		if m == nil {
			return false, "", fmt.Errorf("node osImage %q: no RHCOS version in it", os)
		}
		if p == nil || m[1] != p[1] || m[2] != p[2] {
			return true, fmt.Sprintf("nodes run %q, the payload's OS is %s", os, f.PayloadOSVersion), nil
		}
	}
	return false, "nodes run the cluster's y-stream", nil
}
