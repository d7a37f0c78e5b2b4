package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// PreviousImageAnnot is the annotation rollout leaves on kiln's
// MachineConfig: the osImageURL it replaced, the rollback target.
const PreviousImageAnnot = "kiln.dev/previous-image"

// DefaultPerPool is how many of a pool's most recent rendered configs'
// images are kept besides the current and desired ones.
const DefaultPerPool = 3

// Cluster is what the keep set is read from.
type Cluster struct {
	Pools          []mcfgv1.MachineConfigPool
	MachineConfigs []mcfgv1.MachineConfig
	Nodes          []mcfgv1.MachineConfigNode
	// ModuleDay0s name kiln's kmod images: their containerImage and
	// unsigned image tags, and the image last applied.
	ModuleDay0s []kmmv1beta1.ModuleDay0
	// Runs and TaskRuns are kiln's runs and their tasks: the images of
	// those not finished, and of the newest upgrade-ahead ones, stay
	// (RunImages).
	Runs     []pipelinev1.PipelineRun
	TaskRuns []pipelinev1.TaskRun
	// PinnedImageSets name images the nodes pull ahead (kiln stages an
	// upgrade-ahead image this way); anyone's set keeps its images.
	PinnedImageSets []mcfgv1.PinnedImageSet
	// Live are the images of runs in progress or queued (image
	// references), which may be rolled out next.
	Live []string
}

// Named is an image the cluster names, and why it must stay.
type Named struct {
	Image  string
	Reason string
}

// NamedImages lists every image c names that must stay: the osImageURL of
// each pool's current and desired rendered config, of its perPool most
// recent rendered configs, of every other (not rendered) MachineConfig
// such as kiln's own, kiln's previous-image rollback target, each
// MachineConfigNode's desired and current image, each ModuleDay0's kmod
// images (moduleDay0Images), the images kiln's runs may still roll out
// (RunImages), every PinnedImageSet's images, and the live images given. The order is
// fixed (by pool, node, config and ModuleDay0 name).
func NamedImages(c Cluster, perPool int) []Named {
	mcs := make(map[string]*mcfgv1.MachineConfig, len(c.MachineConfigs))
	for i := range c.MachineConfigs {
		mcs[c.MachineConfigs[i].Name] = &c.MachineConfigs[i]
	}
	var out []Named
	add := func(image, reason string) {
		if image != "" {
			out = append(out, Named{Image: image, Reason: reason})
		}
	}
	for _, p := range sortedBy(c.Pools, func(p mcfgv1.MachineConfigPool) string { return p.Name }) {
		for _, r := range []struct{ which, name string }{
			{"current", p.Status.Configuration.Name}, {"desired", p.Spec.Configuration.Name},
		} {
			if mc := mcs[r.name]; mc != nil {
				add(mc.Spec.OSImageURL, fmt.Sprintf("pool %s: %s rendered config %s", p.Name, r.which, r.name))
			}
		}
		for _, mc := range recentRendered(c.MachineConfigs, p.Name, perPool) {
			add(mc.Spec.OSImageURL, fmt.Sprintf("pool %s: rendered config %s, one of its %d most recent", p.Name, mc.Name, perPool))
		}
	}
	for _, mc := range sortedBy(c.MachineConfigs, func(m mcfgv1.MachineConfig) string { return m.Name }) {
		if isRendered(&mc) {
			continue
		}
		add(mc.Spec.OSImageURL, fmt.Sprintf("MachineConfig %s: osImageURL", mc.Name))
		add(mc.Annotations[PreviousImageAnnot], fmt.Sprintf("MachineConfig %s: rollback target (%s)", mc.Name, PreviousImageAnnot))
	}
	for _, n := range sortedBy(c.Nodes, func(n mcfgv1.MachineConfigNode) string { return n.Name }) {
		add(string(n.Spec.ConfigImage.DesiredImage), fmt.Sprintf("MachineConfigNode %s: desired image", n.Name))
		add(string(n.Status.ConfigImage.DesiredImage), fmt.Sprintf("MachineConfigNode %s: observed desired image", n.Name))
		add(string(n.Status.ConfigImage.CurrentImage), fmt.Sprintf("MachineConfigNode %s: current image", n.Name))
	}
	out = append(out, moduleDay0Images(c.ModuleDay0s)...)
	out = append(out, RunImages(c.Runs, c.TaskRuns)...)
	for _, ps := range sortedBy(c.PinnedImageSets, func(p mcfgv1.PinnedImageSet) string { return p.Name }) {
		for _, img := range ps.Spec.PinnedImages {
			add(string(img.Name), fmt.Sprintf("PinnedImageSet %s: pinned on its pools' nodes", ps.Name))
		}
	}
	for _, img := range c.Live {
		add(img, "a live run's image")
	}
	return out
}

// isRendered reports whether mc is one MCO rendered for a pool: owned by a
// MachineConfigPool. Such configs are only history; the pool names the
// ones in use.
func isRendered(mc *mcfgv1.MachineConfig) bool {
	return renderedPool(mc) != ""
}

// renderedPool is the pool that owns a rendered config, "" if none: the
// MachineConfigPool owner MCO's render controller sets, else the pool in
// its rendered-<pool>-<hash> name (a manifest folder may drop owners).
func renderedPool(mc *mcfgv1.MachineConfig) string {
	for _, o := range mc.OwnerReferences {
		if o.Kind == "MachineConfigPool" {
			return o.Name
		}
	}
	rest, ok := strings.CutPrefix(mc.Name, "rendered-")
	if i := strings.LastIndexByte(rest, '-'); ok && i > 0 {
		return rest[:i]
	}
	return ""
}

// recentRendered returns the n most recently created rendered configs of
// pool that name an image, newest first; configs naming the same image
// count once, so n is a number of images.
func recentRendered(all []mcfgv1.MachineConfig, pool string, n int) []mcfgv1.MachineConfig {
	var own []mcfgv1.MachineConfig
	for _, mc := range all {
		if renderedPool(&mc) == pool && mc.Spec.OSImageURL != "" {
			own = append(own, mc)
		}
	}
	slices.SortFunc(own, func(a, b mcfgv1.MachineConfig) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	var out []mcfgv1.MachineConfig
	seen := map[string]bool{}
	for _, mc := range own {
		if len(out) == n {
			break
		}
		if !seen[mc.Spec.OSImageURL] {
			seen[mc.Spec.OSImageURL] = true
			out = append(out, mc)
		}
	}
	return out
}

func sortedBy[T any](in []T, key func(T) string) []T {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return out
}
