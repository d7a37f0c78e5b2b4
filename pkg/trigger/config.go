package trigger

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline/pod"
	pipelinev1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/pkg/imageref"
	"github.com/kiln-dev/kiln/pkg/payload"
	"github.com/kiln-dev/kiln/pkg/rollout"
)

// ConfigName is the ConfigMap, in the trigger's namespace, that says how
// PipelineRuns are made.
const ConfigName = "kiln-config"

// Keys of the kiln-config ConfigMap.
const (
	keyRepository         = "repository"
	keyPipeline           = "pipeline"
	keyBootImagesPipeline = "bootImagesPipeline"
	keyParams             = "params"
	keyWorkspaces         = "workspaces"
	keyBootImagePools     = "bootImagePools"
	keyTimeout            = "timeout"
	keySAPrefix           = "serviceAccountPrefix"
	keyPodTemplate        = "podTemplate"
	keyDriftGate          = "driftGate"
	keyUpgradeAhead       = "upgradeAhead"
	// keyRetention is the retention block (YAML): keepPerPool, schedule
	// and apply, for the scheduled kiln-prune TaskRun (prune.go).
	keyRetention = "retention"
)

// Config is the parsed kiln-config ConfigMap. It is a value: Parse builds
// it once per change and reconcilers only read it.
type Config struct {
	// Repository receives each pool's images; "{pool}" is replaced by the
	// pool's name.
	Repository string
	// Pipeline and BootImagesPipeline name the Pipelines in the namespace.
	Pipeline, BootImagesPipeline string
	// Params are passed to every node-image run (e.g. kiln-image, canary).
	Params map[string]string
	// Workspaces are bound on every run: work, signing-key, public-key, …
	Workspaces []pipelinev1.WorkspaceBinding
	// BootImagePools are the pools whose run ends with the bootimages
	// stage (worker-role pools by default).
	BootImagePools []string
	// Timeout bounds a whole run.
	Timeout time.Duration
	// ServiceAccountPrefix names each task's ServiceAccount: prefix +
	// pipeline task name (config/ makes kiln-render, kiln-rollout, …).
	// Empty leaves the namespace's default ServiceAccount.
	ServiceAccountPrefix string
	// PodTemplate is every TaskRun's pod template (nodeSelector,
	// tolerations, env such as KILN_INSECURE_REGISTRY, …); nil leaves
	// Tekton's defaults.
	PodTemplate *pod.Template
	// DriftGate is the rollout's drift gate mode per pool ("*" for the
	// others): enforce, warn or off. A pool it does not name keeps the
	// Pipeline's default (enforce). It becomes the run's drift-gate param.
	DriftGate map[string]string
	// Retention is the scheduled prune of kiln's registry images
	// (retention block; off by default).
	Retention Retention
	// UpgradeAhead selects the releases, among the ClusterVersion's offered
	// updates, that each enabled pool gets an upgrade-ahead run for
	// (ahead.go): z-stream, y-stream, desired, or none. The default is all
	// three.
	UpgradeAhead payload.Selection
	// Cluster is not read from kiln-config: in cluster mode the trigger
	// sets it from the cluster (registry copies, proxy) before a run is
	// built, and kiln-config's own settings win over it.
	Cluster ClusterRun
}

// reserved params are the trigger's own; kiln-config may not set them.
var reserved = map[string]bool{
	"pool": true, "repository": true, "update-boot-images": true, "kmod-rebuild": true, "trigger": true, "changes": true,
	paramRollout: true, paramTargetRelease: true, paramTargetReleaseImage: true,
}

// paramStepsImage is the Pipeline param naming kiln's steps image.
const paramStepsImage = "kiln-image"

// ParseConfig reads kiln-config. Every error names the ConfigMap and key.
func ParseConfig(cm *corev1.ConfigMap) (Config, error) {
	if cm == nil {
		return Config{}, fmt.Errorf("ConfigMap %s not found: the trigger needs it to make PipelineRuns", ConfigName)
	}
	where := func(key string) string { return fmt.Sprintf("ConfigMap %s/%s: data.%s", cm.Namespace, cm.Name, key) }
	d := cm.Data
	c := Config{
		Repository:           strings.TrimSpace(d[keyRepository]),
		Pipeline:             orDefault(d[keyPipeline], "kiln-node-image"),
		BootImagesPipeline:   orDefault(d[keyBootImagesPipeline], "kiln-bootimages"),
		ServiceAccountPrefix: "kiln-",
		Timeout:              3 * time.Hour,
		BootImagePools:       []string{"worker"},
		Retention:            DefaultRetention(),
		UpgradeAhead:         payload.DefaultSelection,
	}
	if c.Repository == "" {
		return Config{}, fmt.Errorf("%s is empty: name the repository for the pools' images, e.g. quay.io/org/os-{pool}", where(keyRepository))
	}
	// {pool} is replaced by a pool name, itself a valid path component.
	if _, err := imageref.ParseRepository(strings.ReplaceAll(c.Repository, "{pool}", "pool")); err != nil {
		return Config{}, fmt.Errorf("%s %q: want a repository without tag or digest: %w", where(keyRepository), c.Repository, err)
	}
	if v, ok := d[keySAPrefix]; ok {
		c.ServiceAccountPrefix = strings.TrimSpace(v)
	}
	if v, ok := d[keyBootImagePools]; ok {
		c.BootImagePools = splitList(v)
	}
	if v := strings.TrimSpace(d[keyTimeout]); v != "" {
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			return Config{}, fmt.Errorf("%s %q: want a positive duration such as 3h", where(keyTimeout), v)
		}
		c.Timeout = t
	}
	if v := d[keyParams]; strings.TrimSpace(v) != "" {
		if err := yaml.UnmarshalStrict([]byte(v), &c.Params); err != nil {
			return Config{}, fmt.Errorf("%s: want a map of param name to string: %w", where(keyParams), err)
		}
		for _, k := range sortedKeys(c.Params) {
			if reserved[k] {
				return Config{}, fmt.Errorf("%s: param %q is set by the trigger per pool", where(keyParams), k)
			}
		}
		if v, ok := c.Params[paramStepsImage]; ok {
			if _, err := imageref.Parse(v); err != nil {
				return Config{}, fmt.Errorf("%s: param %s %q: want an image reference (repository@sha256:<64 hex>, or repository:tag): %w", where(keyParams), paramStepsImage, v, err)
			}
		}
	}
	if v := d[keyWorkspaces]; strings.TrimSpace(v) != "" {
		if err := yaml.UnmarshalStrict([]byte(v), &c.Workspaces); err != nil {
			return Config{}, fmt.Errorf("%s: want a list of Tekton workspace bindings: %w", where(keyWorkspaces), err)
		}
		seen := map[string]bool{}
		for i, w := range c.Workspaces {
			if w.Name == "" || seen[w.Name] {
				return Config{}, fmt.Errorf("%s[%d]: name %q is empty or repeated", where(keyWorkspaces), i, w.Name)
			}
			seen[w.Name] = true
		}
		if err := publicKeyApart(c.Workspaces); err != nil {
			return Config{}, fmt.Errorf("%s: %w", where(keyWorkspaces), err)
		}
	}
	if v := strings.TrimSpace(d[keyDriftGate]); v != "" {
		gate, err := parseDriftGate(v)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", where(keyDriftGate), err)
		}
		c.DriftGate = gate
	}
	if v := d[keyRetention]; strings.TrimSpace(v) != "" {
		r, err := parseRetention(v, where(keyRetention))
		if err != nil {
			return Config{}, err
		}
		c.Retention = r
	}
	sel, err := UpgradeAheadSelection(cm)
	if err != nil {
		return Config{}, err
	}
	c.UpgradeAhead = sel
	if v := d[keyPodTemplate]; strings.TrimSpace(v) != "" {
		c.PodTemplate = &pod.Template{}
		if err := yaml.UnmarshalStrict([]byte(v), c.PodTemplate); err != nil {
			return Config{}, fmt.Errorf("%s: want a Tekton pod template: %w", where(keyPodTemplate), err)
		}
	}
	return c, nil
}

// UpgradeAheadSelection reads kiln-config's upgradeAhead: the default
// without the key. Local mode reads a folder's kiln-config through it,
// so both modes take and refuse the same values with the same message.
func UpgradeAheadSelection(cm *corev1.ConfigMap) (payload.Selection, error) {
	v, ok := cm.Data[keyUpgradeAhead]
	if !ok {
		return payload.DefaultSelection, nil
	}
	sel, err := payload.ParseSelection(v)
	if err != nil {
		return payload.Selection{}, fmt.Errorf("ConfigMap %s/%s: data.%s: %w", cm.Namespace, cm.Name, keyUpgradeAhead, err)
	}
	return sel, nil
}

// parseDriftGate reads driftGate: one mode for every pool ("warn"), or a
// map of pool name (or "*") to mode.
func parseDriftGate(v string) (map[string]string, error) {
	if rollout.ValidDriftGate(v) == nil {
		return map[string]string{"*": v}, nil
	}
	var raw map[string]any
	if err := yaml.UnmarshalStrict([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("want enforce, warn or off, or a map of pool name (or \"*\") to one of them: %w", err)
	}
	m := make(map[string]string, len(raw))
	for _, pool := range sortedKeys(raw) {
		switch mode := raw[pool].(type) {
		case string:
			m[pool] = mode
		case bool: // YAML 1.1 reads an unquoted off as false
			if mode {
				return nil, fmt.Errorf("pool %q: drift gate true: want enforce, warn or off", pool)
			}
			m[pool] = rollout.DriftGateOff
		default:
			return nil, fmt.Errorf("pool %q: drift gate %v: want enforce, warn or off", pool, mode)
		}
		if err := rollout.ValidDriftGate(m[pool]); err != nil {
			return nil, fmt.Errorf("pool %q: %w", pool, err)
		}
	}
	return m, nil
}

// DriftGateFor is pool's drift gate mode, "" when kiln-config does not
// set one (the Pipeline's default applies).
func (c Config) DriftGateFor(pool string) string {
	if m, ok := c.DriftGate[pool]; ok {
		return m
	}
	return c.DriftGate["*"]
}

// RepositoryFor is the image repository of pool's images.
func (c Config) RepositoryFor(pool string) string {
	return strings.ReplaceAll(c.Repository, "{pool}", pool)
}

// UpdatesBootImages reports whether pool's run ends with bootimages.
func (c Config) UpdatesBootImages(pool string) bool {
	for _, p := range c.BootImagePools {
		if p == pool || p == "*" {
			return true
		}
	}
	return false
}

func orDefault(v, def string) string {
	if v = strings.TrimSpace(v); v != "" {
		return v
	}
	return def
}

func splitList(v string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		out = append(out, f)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// publicKeyApart refuses a public-key workspace bound to the signing key's
// Secret: the steps that run user code (kmod-build's and image-build's
// buildah paths) mount public-key, so that Secret must hold cosign.pub
// alone, never the private key beside it.
func publicKeyApart(ws []pipelinev1.WorkspaceBinding) error {
	secret := func(name string) string {
		for _, w := range ws {
			if w.Name == name && w.Secret != nil {
				return w.Secret.SecretName
			}
		}
		return ""
	}
	if s := secret("signing-key"); s != "" && s == secret("public-key") {
		return fmt.Errorf("public-key binds Secret %q, the signing key's: steps that run user code mount public-key, so bind a Secret or ConfigMap that holds cosign.pub alone", s)
	}
	return nil
}
