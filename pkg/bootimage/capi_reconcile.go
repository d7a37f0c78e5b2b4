package bootimage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"

	mcfgv1alpha1 "github.com/kiln-dev/kiln/pkg/apis/machineconfiguration/v1alpha1"
	"github.com/kiln-dev/kiln/pkg/work"
)

// CAPIReport is the Cluster API part of a pass, part of Report.
type CAPIReport = work.CAPIReport

// clusterAPI reconciles the enrolled Cluster API MachineSets, then deletes
// the templates it replaced that nothing refers to any more. Per-MachineSet
// failures are recorded in the report; a returned error stops the pass.
func (p *pass) clusterAPI(ctx context.Context) error {
	sel, err := p.CAPI.selector()
	if err != nil || sel == nil {
		return err
	}
	cc, ok := p.Cluster.(CAPICluster)
	if !ok {
		return fmt.Errorf("Cluster API opt-in %s: %T serves no Cluster API objects", p.CAPI.Mode, p.Cluster)
	}
	ns := p.CAPI.Namespace
	if ns == "" {
		ns = CAPINamespace
	}
	rep := &CAPIReport{Patched: []Outcome{}, UpToDate: []string{}, Skipped: []Outcome{}, Errors: []Outcome{}, TemplatesCreated: []string{}, TemplatesDeleted: []string{}}
	p.report.CAPI = rep
	sets, err := cc.CAPIMachineSets(ctx, ns, sel)
	if err != nil {
		return err
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].GetName() < sets[j].GetName() })
	rep.Enrolled = len(sets)
	p.logf("Cluster API: %d MachineSets enrolled in %s", len(sets), ns)
	if len(sets) == 0 {
		return nil
	}
	if err := p.prerequisites(ctx); err != nil {
		return err
	}
	replaced := map[string]candidate{} // old templates, by TemplateRef.key
	for _, ms := range sets {
		if err := p.capiOne(ctx, cc, ms, replaced); err != nil {
			var fatal *clusterError
			if errors.As(err, &fatal) {
				return fatal.err
			}
			rep.Errors = append(rep.Errors, Outcome{Name: ms.GetName(), Reason: err.Error()})
			p.logf("Cluster API MachineSet %s: %v", ms.GetName(), err)
		}
	}
	return p.collectTemplates(ctx, cc, ns, replaced)
}

// candidate is a template kiln replaced; obj is nil when only its name is
// known (from a clone's TemplateClonedFromAnnotation).
type candidate struct {
	ref TemplateRef
	obj *unstructured.Unstructured
}

// capiOne reconciles one CAPI MachineSet, re-reading it and deciding again
// when the patch meets a conflict (the clone, being content-named, is found
// again rather than duplicated).
func (p *pass) capiOne(ctx context.Context, cc CAPICluster, ms *unstructured.Unstructured, replaced map[string]candidate) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			fresh, err := cc.CAPIMachineSet(ctx, ms.GetNamespace(), ms.GetName())
			if err != nil {
				return err
			}
			ms = fresh
		}
		first = false
		return p.capiDecide(ctx, cc, ms, replaced)
	})
}

func (p *pass) capiDecide(ctx context.Context, cc CAPICluster, ms *unstructured.Unstructured, replaced map[string]candidate) error {
	rep := p.report.CAPI
	name := ms.GetNamespace() + "/" + ms.GetName()
	skip := func(reason string) error {
		rep.Skipped = append(rep.Skipped, Outcome{Name: ms.GetName(), Reason: reason})
		p.logf("Cluster API MachineSet %s: skipped: %s", ms.GetName(), reason)
		return nil
	}
	// MachineSets of a MachineDeployment are owned: the MachineDeployment's
	// own template decides (not handled yet; see the README).
	// MachineSets of a MachineDeployment are owned, so skipped: the
	// MachineDeployment's own template decides (not handled yet; see the
	// README).
	tmplLabels, _, _ := unstructured.NestedStringMap(ms.Object, "spec", "template", "metadata", "labels")
	arch, reason, err := p.guards(ctx, ms, tmplLabels)
	if err != nil || reason != "" {
		return errOrSkip(err, reason, skip)
	}
	ref, err := infraRef(ms)
	if err != nil {
		return err
	}
	up, ok := TemplateUpdaterFor(ref.Group, ref.Kind)
	if !ok {
		return fmt.Errorf("MachineSet %s %s: %s.%s is not a supported infrastructure template (supported: %s)", name, infraRefField, ref.Kind, ref.Group, SupportedTemplateKinds)
	}
	tmpl, err := cc.InfraTemplate(ctx, ref)
	if err != nil {
		return fmt.Errorf("MachineSet %s %s: %w", name, infraRefField, err)
	}
	// As for Machine API MachineSets (reconcile.go decideAndPatch): a bad
	// stream fails this MachineSet only.
	if p.streamErr != nil {
		return fmt.Errorf("MachineSet %s: %w", name, p.streamErr)
	}
	plan, err := up.PlanTemplate(TemplateInput{Template: tmpl, Arch: arch, Stream: p.stream, Infra: p.infra})
	if err != nil {
		return fmt.Errorf("MachineSet %s: %w", name, err)
	}
	if plan.Skip != "" {
		return skip(plan.Skip)
	}
	if len(plan.Edits) == 0 {
		rep.UpToDate = append(rep.UpToDate, ms.GetName())
		// A pass interrupted between the patch and the deletion left the
		// old template behind: offer it for collection again.
		if old := tmpl.GetAnnotations()[TemplateClonedFromAnnotation]; old != "" {
			r := RefOf(tmpl)
			r.Name = old
			if _, ok := replaced[r.key()]; !ok {
				replaced[r.key()] = candidate{ref: r}
			}
		}
		return nil
	}
	clone, err := cloneTemplate(tmpl, plan.Edits)
	if err != nil {
		return fmt.Errorf("MachineSet %s: %w", name, err)
	}
	hot, err := hotLoopCheck(ms, []byte(RefOf(clone).key()))
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"resourceVersion": ms.GetResourceVersion(),
			"annotations":     map[string]string{HotLoopAnnotation: hot},
		},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"infrastructureRef": map[string]any{"name": clone.GetName()},
		}}},
	})
	if err != nil {
		return err
	}
	if err := p.ensureClone(ctx, cc, clone); err != nil {
		return fmt.Errorf("MachineSet %s: %w", name, err)
	}
	if err := cc.PatchCAPIMachineSet(ctx, ms, patch); err != nil {
		if apierrors.IsConflict(err) {
			return err
		}
		return fmt.Errorf("patching Cluster API MachineSet %s: %w", name, err)
	}
	replaced[RefOf(tmpl).key()] = candidate{ref: RefOf(tmpl), obj: tmpl}
	rep.Patched = append(rep.Patched, Outcome{Name: ms.GetName(), From: plan.Current, To: plan.Target, Template: clone.GetName()})
	if !p.NoHistory {
		ref := mcfgv1alpha1.MachineResourceReference{Name: ms.GetName(), Resource: "MachineSet", APIGroup: CAPIGroup}
		if err := p.record(ctx, ms.GetNamespace(), CAPIHistoryName(ms.GetName()), ref, plan); err != nil {
			return err
		}
	}
	p.logf("Cluster API MachineSet %s: boot image %s → %s (%s %s → %s)", ms.GetName(), plan.Current, plan.Target, ref.Kind, tmpl.GetName(), clone.GetName())
	return nil
}

// ensureClone creates the clone unless an object of that name exists with
// the same spec (a re-run, or a MachineSet sharing the template): it reads
// first so that a shared clone costs no failed write.
func (p *pass) ensureClone(ctx context.Context, cc CAPICluster, clone *unstructured.Unstructured) error {
	ref := RefOf(clone)
	have, err := cc.InfraTemplate(ctx, ref)
	var missing *NotFoundError
	switch {
	case errors.As(err, &missing):
		err = cc.CreateInfraTemplate(ctx, clone)
		if err == nil {
			p.report.CAPI.TemplatesCreated = append(p.report.CAPI.TemplatesCreated, ref.String())
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", ref, err)
		}
		if have, err = cc.InfraTemplate(ctx, ref); err != nil { // created meanwhile
			return fmt.Errorf("reading existing %s: %w", ref, err)
		}
	case err != nil:
		return fmt.Errorf("reading existing %s: %w", ref, err)
	}
	if !equality.Semantic.DeepEqual(have.Object["spec"], clone.Object["spec"]) {
		return fmt.Errorf("%s exists with a different spec than the clone kiln would create; rename or delete it", ref)
	}
	return nil
}

// collectTemplates deletes the replaced templates that no Cluster API
// MachineSet or MachineDeployment in ns refers to any more. Only templates
// kiln replaced are candidates; nothing else is ever deleted.
func (p *pass) collectTemplates(ctx context.Context, cc CAPICluster, ns string, replaced map[string]candidate) error {
	if len(replaced) == 0 {
		return nil
	}
	sets, err := cc.CAPIMachineSets(ctx, ns, labels.Everything())
	if err != nil {
		return err
	}
	mds, err := cc.CAPIMachineDeployments(ctx, ns)
	if err != nil {
		return err
	}
	inUse := map[string]bool{}
	for _, o := range append(sets, mds...) {
		if r, err := infraRef(o); err == nil {
			inUse[r.key()] = true
		}
	}
	keys := make([]string, 0, len(replaced))
	for k := range replaced {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if inUse[k] {
			continue
		}
		t := replaced[k].obj
		if t == nil { // offered by an up-to-date MachineSet: read it, if it still exists
			var missing *NotFoundError
			if t, err = cc.InfraTemplate(ctx, replaced[k].ref); errors.As(err, &missing) {
				continue
			} else if err != nil {
				return err
			}
		}
		if err := cc.DeleteInfraTemplate(ctx, t); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting unused %s: %w", RefOf(t), err)
		}
		p.report.CAPI.TemplatesDeleted = append(p.report.CAPI.TemplatesDeleted, RefOf(t).String())
		p.logf("Cluster API: deleted unused %s", RefOf(t))
	}
	return nil
}
