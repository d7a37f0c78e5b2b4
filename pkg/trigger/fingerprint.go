package trigger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"k8s.io/apimachinery/pkg/types"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Part is one input of a pool's fingerprint. A run records each part's
// digest, so the next run can say which input changed (its trigger).
type Part string

// The parts, in the order a trigger reason is chosen when several changed:
// a user's explicit request first, then the payload, then the kmods.
const (
	PartManual         Part = "manual"
	PartPipeline       Part = "pipeline"
	PartPayload        Part = "payload"
	PartModuleDay0     Part = "moduleday0"
	PartMachineConfigs Part = "machineconfigs"
)

var partOrder = []Part{PartManual, PartPipeline, PartPayload, PartModuleDay0, PartMachineConfigs}

// Trigger label values (kiln.dev/trigger).
const (
	TriggerMachineConfig = "machineconfig"
	TriggerPayload       = "payload"
	TriggerModuleDay0    = "moduleday0"
	TriggerManual        = "manual"
	// TriggerGitOps marks runs a Git push started, through the
	// config/samples EventListener or Pipelines-as-Code, not the trigger.
	TriggerGitOps = "gitops"
)

// reason maps a changed part to the kiln.dev/trigger value. A new pipeline
// version is an administrator's act, hence manual.
var reason = map[Part]string{
	PartManual: TriggerManual, PartPipeline: TriggerManual, PartPayload: TriggerPayload,
	PartModuleDay0: TriggerModuleDay0, PartMachineConfigs: TriggerMachineConfig,
}

// Inputs are everything a pool's image is made from.
type Inputs struct {
	// MachineConfigs are the MCs the pool selects, kiln's own left out.
	MachineConfigs []*mcfgv1.MachineConfig
	// BaseImage and ExtensionsImage are the payload's, by digest.
	BaseImage, ExtensionsImage string
	// ModuleDay0 is the pool's, or nil.
	ModuleDay0 *kmmv1beta1.ModuleDay0
	// PipelineVersion is the Pipeline's app.kubernetes.io/version.
	PipelineVersion string
	// Rebuild is the pool's kiln.dev/rebuild annotation: changing it asks
	// for a new run of unchanged inputs (GitOps "rebuild now").
	Rebuild string
	// Formats are the build formats of this kiln; nil means
	// trust.Formats(). A kiln that builds differently starts new runs, as
	// a new Pipeline version does, since its images are not reusable.
	Formats []string
}

// Fingerprint identifies a pool's inputs. Sum is 32 hex digits (128 bits),
// short enough for a label value.
type Fingerprint struct {
	Sum   string
	Parts map[Part]string
	// Inputs name what the parts hash (each MachineConfig's spec hash, the
	// images, the ModuleDay0), so that Describe can say what changed.
	Inputs map[string]string
}

// Changed returns the trigger reason of going from prev (the parts a
// previous run recorded; nil for the pool's first run) to f.
func (f Fingerprint) Changed(prev map[Part]string) string {
	for _, p := range partOrder {
		if prev != nil && prev[p] != f.Parts[p] {
			return reason[p]
		}
	}
	return TriggerMachineConfig
}

// SpecHasher digests MachineConfig specs, remembering each by UID and
// resourceVersion: a pool of hundreds of MCs is re-fingerprinted on every
// edit, and Ignition configs are large.
type SpecHasher struct {
	mu   sync.Mutex
	seen map[types.UID]hashed
}

type hashed struct{ rv, sum string }

func (h *SpecHasher) sum(mc *mcfgv1.MachineConfig) (string, error) {
	h.mu.Lock()
	if e, ok := h.seen[mc.UID]; ok && e.rv == mc.ResourceVersion && mc.UID != "" {
		h.mu.Unlock()
		return e.sum, nil
	}
	h.mu.Unlock()
	b, err := json.Marshal(mc.Spec)
	if err != nil {
		return "", fmt.Errorf("hashing MachineConfig %q spec: %w", mc.Name, err)
	}
	s := digest(b)
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[types.UID]hashed{}
	}
	h.seen[mc.UID] = hashed{mc.ResourceVersion, s}
	h.mu.Unlock()
	return s, nil
}

// Forget drops a deleted MC's entry.
func (h *SpecHasher) Forget(uid types.UID) {
	h.mu.Lock()
	delete(h.seen, uid)
	h.mu.Unlock()
}

// Compute fingerprints in. MCs are taken by name order, whatever order
// they come in: the merge order is render's business, and a reordering of
// the same set is no change.
func (h *SpecHasher) Compute(in Inputs) (Fingerprint, error) {
	mcs := append([]*mcfgv1.MachineConfig(nil), in.MachineConfigs...)
	sort.Slice(mcs, func(i, j int) bool { return mcs[i].Name < mcs[j].Name })
	var b strings.Builder
	formats := in.Formats
	if formats == nil {
		formats = trust.Formats()
	}
	inputs := map[string]string{
		inputBase: in.BaseImage, inputExtensions: in.ExtensionsImage, inputPipeline: in.PipelineVersion,
		inputFormats: digest([]byte(strings.Join(formats, "\n")))[:12], inputRebuild: in.Rebuild,
	}
	for _, mc := range mcs {
		s, err := h.sum(mc)
		if err != nil {
			return Fingerprint{}, err
		}
		fmt.Fprintf(&b, "%s=%s\n", mc.Name, s)
		inputs[inputMC+mc.Name] = s[:12]
	}
	parts := map[Part]string{
		PartMachineConfigs: digest([]byte(b.String())),
		PartPayload:        digest([]byte(in.BaseImage + "\n" + in.ExtensionsImage)),
		PartPipeline:       digest([]byte(in.PipelineVersion + "\n" + strings.Join(formats, "\n"))),
		PartManual:         digest([]byte(in.Rebuild)),
		PartModuleDay0:     digest(nil),
	}
	if in.ModuleDay0 != nil {
		spec, err := json.Marshal(in.ModuleDay0.Spec)
		if err != nil {
			return Fingerprint{}, fmt.Errorf("hashing ModuleDay0 %q spec: %w", in.ModuleDay0.Name, err)
		}
		parts[PartModuleDay0] = digest(append([]byte(in.ModuleDay0.Namespace+"/"+in.ModuleDay0.Name+"\n"), spec...))
		inputs[inputModuleDay0] = in.ModuleDay0.Namespace + "/" + in.ModuleDay0.Name + "@" + parts[PartModuleDay0][:12]
	}
	var all strings.Builder
	for _, p := range partOrder {
		fmt.Fprintf(&all, "%s=%s\n", p, parts[p])
	}
	return Fingerprint{Sum: digest([]byte(all.String())), Parts: parts, Inputs: inputs}, nil
}

// digest is the first 128 bits of sha256, in hex.
func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:16])
}

// encodeParts and decodeParts keep the parts in one annotation.
func encodeParts(parts map[Part]string) string {
	var out []string
	for _, p := range partOrder {
		out = append(out, string(p)+"="+parts[p])
	}
	return strings.Join(out, ",")
}

func decodeParts(s string) map[Part]string {
	if s == "" {
		return nil
	}
	m := map[Part]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		m[Part(k)] = v
	}
	return m
}
