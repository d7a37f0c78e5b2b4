package kmod

import (
	"strings"
	"testing"
)

func TestNeedsUpgradeRebuild(t *testing.T) {
	const (
		os414 = "Red Hat Enterprise Linux CoreOS 414.92.202312311229-0 (Plow)"
		os415 = "Red Hat Enterprise Linux CoreOS 415.92.202402130021-0 (Plow)"
		os96  = "Red Hat Enterprise Linux CoreOS 9.6.20250523-0 (Plow)"
		os10  = "Red Hat Enterprise Linux CoreOS 10.0.20251101-0 (Coughlan)"
	)
	on := md(true, false, "")
	on.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade = true
	cases := []struct {
		name    string
		flag    bool
		f       UpgradeFacts
		want    bool
		wantMsg string
	}{
		{"flag off does nothing", false, UpgradeFacts{ClusterVersion: "4.15.2", NodeOSImages: []string{os414}}, false, "clusterUpgradeTriggerNodeUpgrade is false"},
		{"same y-stream", true, UpgradeFacts{ClusterVersion: "4.14.9", NodeOSImages: []string{os414, os414}}, false, "nodes run the cluster's y-stream"},
		{"z-stream only", true, UpgradeFacts{ClusterVersion: "4.14.30", NodeOSImages: []string{os414}}, false, "nodes run the cluster's y-stream"},
		{"y-stream upgrade", true, UpgradeFacts{ClusterVersion: "4.15.2", NodeOSImages: []string{os415, os414}}, true, "(OpenShift 4.14), the cluster is moving to 4.15.2"},
		{"RHEL-versioned nodes, same RHEL", true, UpgradeFacts{ClusterVersion: "4.20.1", PayloadOSVersion: "9.6.20250901-0", NodeOSImages: []string{os96}}, false, "nodes run the cluster's y-stream"},
		{"RHEL-versioned nodes, new RHEL", true, UpgradeFacts{ClusterVersion: "4.22.0", PayloadOSVersion: "10.0.20251101-0", NodeOSImages: []string{os96}}, true, "the payload's OS is 10.0.20251101-0"},
		{"RHEL 10 nodes", true, UpgradeFacts{ClusterVersion: "4.22.0", PayloadOSVersion: "10.0.20251201-0", NodeOSImages: []string{os10}}, false, "nodes run the cluster's y-stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := md(true, false, "")
			m.Spec.OSMapping.ClusterUpgradeTriggerNodeUpgrade = tc.flag
			got, msg, err := NeedsUpgradeRebuild(m, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || !strings.Contains(msg, tc.wantMsg) {
				t.Errorf("got %v %q, want %v containing %q", got, msg, tc.want, tc.wantMsg)
			}
		})
	}
	if _, _, err := NeedsUpgradeRebuild(on, UpgradeFacts{ClusterVersion: "stable"}); err == nil || !strings.Contains(err.Error(), `"stable" is not an OpenShift 4.y version`) {
		t.Errorf("bad cluster version: %v", err)
	}
	if _, _, err := NeedsUpgradeRebuild(on, UpgradeFacts{ClusterVersion: "4.15.0", NodeOSImages: []string{"Fedora Linux 40"}}); err == nil || !strings.Contains(err.Error(), "no RHCOS version") {
		t.Errorf("unknown OS: %v", err)
	}
}
