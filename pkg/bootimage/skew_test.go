package bootimage

import (
	"context"
	"strings"
	"testing"
	"time"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1 "github.com/openshift/api/operator/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kiln-dev/kiln/test/env"
)

func TestEvaluateSkew(t *testing.T) {
	cv := &configv1.ClusterVersion{Status: configv1.ClusterVersionStatus{History: []configv1.UpdateHistory{
		{State: configv1.PartialUpdate, Version: "4.20.3"}, {State: configv1.CompletedUpdate, Version: "4.19.7"}, {State: configv1.CompletedUpdate, Version: "4.12.2"}}}}
	auto := func(a operatorv1.ClusterBootImageAutomatic) *operatorv1.MachineConfiguration {
		mc := &operatorv1.MachineConfiguration{}
		mc.Status.BootImageSkewEnforcementStatus = operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic, Automatic: a}
		return mc
	}
	manual := func(m operatorv1.ClusterBootImageManual) *operatorv1.MachineConfiguration {
		mc := &operatorv1.MachineConfiguration{}
		mc.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeManual, Manual: m}
		return mc
	}
	clean := &Report{}
	skipped := &Report{Skipped: []Outcome{{Name: "x"}}}
	cases := []struct {
		name       string
		mc         *operatorv1.MachineConfiguration
		rep        *Report
		failed     bool
		wantAuto   string // "" = no new record
		wantExceed bool
		wantMode   operatorv1.BootImageSkewEnforcementModeStatus
	}{
		{name: "automatic clean pass records the release", mc: auto(operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.12.0"}), rep: clean, wantAuto: "4.20.3", wantMode: "Automatic"},
		{name: "automatic skip falls back to install version", mc: auto(operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.20.3"}), rep: skipped, wantAuto: "4.12.2", wantExceed: true, wantMode: "Automatic"},
		{name: "automatic failure keeps the record", mc: auto(operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.12.0"}), rep: clean, failed: true, wantExceed: true, wantMode: "Automatic"},
		{name: "manual old OCP", mc: manual(operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: "4.12.9"}), rep: clean, wantExceed: true, wantMode: "Manual"},
		{name: "manual recent OCP", mc: manual(operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: "4.16.0"}), rep: clean, wantMode: "Manual"},
		{name: "manual legacy RHCOS 9.0", mc: manual(operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "410.90.202201010000-0"}), rep: clean, wantExceed: true, wantMode: "Manual"},
		{name: "manual RHCOS 9.6", mc: manual(operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeRHCOSVersion, RHCOSVersion: "9.6.20261001-0"}), rep: clean, wantMode: "Manual"},
		{name: "none", mc: &operatorv1.MachineConfiguration{Spec: operatorv1.MachineConfigurationSpec{BootImageSkewEnforcement: operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeNone}}}, rep: clean, wantMode: "None"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := evaluateSkew(c.mc, c.rep, c.failed, "4.20.3", cv, DefaultSkewLimits)
			if s.Mode != c.wantMode || s.Exceeded != c.wantExceed {
				t.Fatalf("mode %s exceeded %v (%s)", s.Mode, s.Exceeded, s.Message)
			}
			if got := ""; s.Automatic != nil {
				got = s.Automatic.OCPVersion
				if got != c.wantAuto {
					t.Fatalf("automatic record %q, want %q", got, c.wantAuto)
				}
			} else if c.wantAuto != "" {
				t.Fatalf("no automatic record, want %q", c.wantAuto)
			}
			cond := upgradeableCondition(s)
			switch {
			case c.wantMode == "None" && cond != nil:
				t.Fatalf("condition under None: %+v", cond)
			case c.wantExceed && (cond == nil || cond.Status != metav1.ConditionFalse || !strings.Contains(cond.Message, "To remediate")):
				t.Fatalf("condition %+v", cond)
			case c.wantMode != "None" && !c.wantExceed && (cond == nil || cond.Status != metav1.ConditionTrue):
				t.Fatalf("condition %+v", cond)
			}
		})
	}
}

// TestSkewOnAPIServer serves the CustomNoUpgrade MachineConfiguration CRD
// (the Default one prunes the skew fields) and checks the Manual and
// Automatic modes end to end.
func TestSkewOnAPIServer(t *testing.T) {
	tc := startCluster(t, configv1.GCPPlatformType)
	ctx := context.Background()
	dir, err := env.ModuleDir("github.com/openshift/api")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := env.LoadCRDs([]string{dir + "/operator/v1/zz_generated.crd-manifests/0000_80_machine-config_01_machineconfigurations-CustomNoUpgrade.crd.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	cur := &apiextensionsv1.CustomResourceDefinition{}
	if err := tc.kube.Client.Get(ctx, client.ObjectKey{Name: crds[0].Name}, cur); err != nil {
		t.Fatal(err)
	}
	crds[0].ResourceVersion = cur.ResourceVersion
	if err := tc.kube.Client.Update(ctx, crds[0]); err != nil {
		t.Fatalf("serving the CustomNoUpgrade CRD: %v", err)
	}
	tc.create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "worker-user-data", Namespace: MachineAPINamespace}, Data: map[string][]byte{UserDataKey: []byte(stubV35)}})
	ms := machineSet(t, "a", gcpSpec(oldGCP))
	tc.create(t, ms)

	// Manual: the admin declares 4.12 boot images, below the 4.13 limit.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		mc := tc.machineConfiguration(t)
		mc.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{Mode: operatorv1.BootImageSkewEnforcementConfigModeManual,
			Manual: operatorv1.ClusterBootImageManual{Mode: operatorv1.ClusterBootImageSpecModeOCPVersion, OCPVersion: "4.12.0"}}
		mc.Spec.ManagedBootImages.MachineManagers = []operatorv1.MachineManager{mapi(operatorv1.None, nil)}
		if err := tc.kube.Client.Update(ctx, mc); err != nil {
			return false, nil
		}
		return tc.machineConfiguration(t).Spec.BootImageSkewEnforcement.Mode == operatorv1.BootImageSkewEnforcementConfigModeManual, nil
	})
	if err != nil {
		t.Fatalf("the apiserver never served spec.bootImageSkewEnforcement: %v", err)
	}
	rep, err := tc.reconciler(MachineAPINamespace).Run(ctx)
	if err != nil || rep.Skew == nil || !rep.Skew.Exceeded {
		t.Fatalf("manual: skew %+v err %v", rep.Skew, err)
	}
	up := condition(tc.machineConfiguration(t), ConditionUpgradeable)
	if up == nil || up.Status != metav1.ConditionFalse || !strings.Contains(up.Message, "OCP 4.12.0, older than the oldest supported 4.13.0") || !strings.Contains(up.Message, "To remediate") {
		t.Fatalf("manual: Upgradeable %+v", up)
	}

	// Automatic: kiln manages all MachineSets; a clean pass records the release.
	mc := tc.machineConfiguration(t)
	mc.Spec.BootImageSkewEnforcement = operatorv1.BootImageSkewEnforcementConfig{}
	mc.Spec.ManagedBootImages.MachineManagers = []operatorv1.MachineManager{mapi(operatorv1.All, nil)}
	if err := tc.kube.Client.Update(ctx, mc); err != nil {
		t.Fatal(err)
	}
	mc = tc.machineConfiguration(t)
	mc.Status.ManagedBootImagesStatus.MachineManagers = []operatorv1.MachineManager{mapi(operatorv1.All, nil)}
	// The Go type always serialises sshkey, whose schema requires actions.
	mc.Status.NodeDisruptionPolicyStatus.ClusterPolicies.SSHKey.Actions = []operatorv1.NodeDisruptionPolicyStatusAction{{Type: operatorv1.NoneStatusAction}}
	mc.Status.BootImageSkewEnforcementStatus = operatorv1.BootImageSkewEnforcementStatus{Mode: operatorv1.BootImageSkewEnforcementModeStatusAutomatic,
		Automatic: operatorv1.ClusterBootImageAutomatic{OCPVersion: "4.12.0"}}
	if err := tc.kube.Client.Status().Update(ctx, mc); err != nil {
		t.Fatalf("operator-side status: %v", err)
	}
	rep, err = tc.reconciler(MachineAPINamespace).Run(ctx)
	if err != nil || len(rep.Patched) != 1 {
		t.Fatalf("automatic: patched %v err %v", rep.Patched, err)
	}
	mc = tc.machineConfiguration(t)
	if got := mc.Status.BootImageSkewEnforcementStatus.Automatic.OCPVersion; got != "4.20.3" {
		t.Errorf("automatic record %q, want 4.20.3", got)
	}
	if up := condition(mc, ConditionUpgradeable); up == nil || up.Status != metav1.ConditionTrue {
		t.Errorf("automatic: Upgradeable %+v", up)
	}
}
