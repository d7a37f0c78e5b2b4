package bootimage

import (
	"context"
	"fmt"
	"time"

	machinev1beta1 "github.com/openshift/api/machine/v1beta1"
)

// upgradeStub converts the MachineSet's user-data Secret to Ignition spec 3
// in place before its boot image moves: new boot images only understand
// spec 3. A failure stops this MachineSet (no patch). The Secret's content
// is never logged or put into errors.
func (p *pass) upgradeStub(ctx context.Context, ms *machinev1beta1.MachineSet, ref SecretRef) error {
	if ref.Name == "" || p.stubsCurrent[ref] {
		return nil
	}
	sec, err := p.Cluster.Secret(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return fmt.Errorf("MachineSet %s/%s user-data Secret: %w", ms.Namespace, ms.Name, err)
	}
	data, ok := sec.Data[UserDataKey]
	if !ok {
		return fmt.Errorf("MachineSet %s/%s user-data Secret %s/%s: no %q key", ms.Namespace, ms.Name, ref.Namespace, ref.Name, UserDataKey)
	}
	out, version, changed, err := UpgradeStub(data)
	if err != nil {
		return fmt.Errorf("MachineSet %s/%s: upgrading stub Ignition in Secret %s/%s: %w", ms.Namespace, ms.Name, ref.Namespace, ref.Name, err)
	}
	if !changed {
		p.markStubCurrent(ref)
		return nil
	}
	sec = sec.DeepCopy()
	sec.Data[UserDataKey] = out
	if sec.Annotations == nil {
		sec.Annotations = map[string]string{}
	}
	sec.Annotations[StubUpgradedToAnnotation] = version
	sec.Annotations[StubUpgradedAtAnnotation] = p.now().UTC().Format(time.RFC3339)
	if err := p.Cluster.UpdateSecret(ctx, sec); err != nil {
		return fmt.Errorf("MachineSet %s/%s: writing upgraded stub Secret %s/%s: %w", ms.Namespace, ms.Name, ref.Namespace, ref.Name, err)
	}
	p.markStubCurrent(ref)
	p.report.StubsUpgraded = append(p.report.StubsUpgraded, ref.Namespace+"/"+ref.Name)
	p.logf("Secret %s/%s: stub Ignition upgraded to %s", ref.Namespace, ref.Name, version)
	return nil
}

func (p *pass) markStubCurrent(ref SecretRef) {
	if p.stubsCurrent == nil {
		p.stubsCurrent = map[SecretRef]bool{}
	}
	p.stubsCurrent[ref] = true
}
