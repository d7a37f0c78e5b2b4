package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
)

// Build formats. Each is part of its build's Inputs: bump one whenever the
// bytes that build produces for the same inputs change, so that an object
// built the old way is never reused for the new layout.
const (
	NodeImageFormat = "kiln-image/3"
	KmodBuildFormat = "kiln-kmod-build/2"
	KmodSignFormat  = "kiln-kmod-sign/1"
)

// Formats lists every build format; the trigger's fingerprint covers them,
// so a new kiln that builds differently starts new runs.
func Formats() []string { return []string{NodeImageFormat, KmodBuildFormat, KmodSignFormat} }

// SLSA buildTypes of kiln's attestations, one per kind of build.
const (
	BuildTypeNodeImage = "https://kiln.dev/build/node-image/v1"
	BuildTypeKmodBuild = "https://kiln.dev/build/kmod-build/v1"
	BuildTypeKmodSign  = "https://kiln.dev/build/kmod-sign/v1"
)

// BuilderID identifies kiln as the SLSA builder.
const BuilderID = "https://github.com/kiln-dev/kiln/kiln-steps"

// Inputs are what one build was made from. An attestation records
// Parameters as the SLSA v1 externalParameters and Dependencies as the
// resolvedDependencies; reuse requires both to be equal, key for key.
// Parameters are strings so that equality is exact and needs no
// canonicalisation of numbers or lists.
type Inputs struct {
	BuildType    string            `json:"buildType"`
	Parameters   map[string]string `json:"parameters"`
	Dependencies []Dependency      `json:"dependencies,omitempty"`
}

// Dependency is an input named by digest: an image (URI oci://repository)
// or a document such as the rendered config.
type Dependency struct {
	Name   string `json:"name"`
	URI    string `json:"uri,omitempty"`
	Digest string `json:"digest"` // alg:hex
}

// Fingerprint is the sha256 of the Inputs in a fixed order: the same
// fingerprint means the same inputs. It names the content-addressed tag.
func (in Inputs) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "buildType=%s\n", in.BuildType)
	for _, k := range slices.Sorted(maps.Keys(in.Parameters)) {
		fmt.Fprintf(h, "param %q=%q\n", k, in.Parameters[k])
	}
	for _, d := range in.sortedDeps() {
		fmt.Fprintf(h, "dep %q %q %q\n", d.Name, d.URI, d.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Validate refuses Inputs that could not bind anything: no build type, an
// empty parameter value where a digest belongs, a dependency without one.
func (in Inputs) Validate() error {
	if in.BuildType == "" {
		return fmt.Errorf("inputs: no build type")
	}
	if in.Parameters["format"] == "" {
		return fmt.Errorf("inputs of %s: no build format", in.BuildType)
	}
	for _, d := range in.Dependencies {
		if alg, hex, ok := strings.Cut(d.Digest, ":"); !ok || alg == "" || hex == "" {
			return fmt.Errorf("inputs of %s: dependency %q has digest %q, want alg:hex", in.BuildType, d.Name, d.Digest)
		}
	}
	return nil
}

// Diff names the first difference between want (in) and got, for a
// rejection message; "" means they are equal.
func (in Inputs) Diff(got Inputs) string {
	if in.BuildType != got.BuildType {
		return fmt.Sprintf("buildType is %q, want %q", got.BuildType, in.BuildType)
	}
	keys := slices.Sorted(maps.Keys(in.Parameters))
	for _, k := range slices.Sorted(maps.Keys(got.Parameters)) {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		w, wok := in.Parameters[k]
		g, gok := got.Parameters[k]
		switch {
		case !gok:
			return fmt.Sprintf("parameter %s is missing, want %q", k, w)
		case !wok:
			return fmt.Sprintf("parameter %s is %q, not one of these inputs", k, g)
		case w != g:
			return fmt.Sprintf("parameter %s is %q, want %q", k, g, w)
		}
	}
	wd, gd := in.sortedDeps(), got.sortedDeps()
	if !slices.Equal(wd, gd) {
		return fmt.Sprintf("dependencies are %v, want %v", gd, wd)
	}
	return ""
}

func (in Inputs) sortedDeps() []Dependency {
	d := slices.Clone(in.Dependencies)
	slices.SortFunc(d, func(a, b Dependency) int {
		return strings.Compare(a.Name+"\x00"+a.URI+"\x00"+a.Digest, b.Name+"\x00"+b.URI+"\x00"+b.Digest)
	})
	return d
}

// imageDep names an image given as repository@alg:hex.
func imageDep(name, ref string) (Dependency, error) {
	repo, dig, ok := strings.Cut(ref, "@")
	if !ok || repo == "" || !strings.Contains(dig, ":") {
		return Dependency{}, fmt.Errorf("%s %q: want repository@sha256:…", name, ref)
	}
	return Dependency{Name: name, URI: "oci://" + repo, Digest: dig}, nil
}

// sortedList joins a set of values in a fixed order.
func sortedList(v []string) string {
	s := slices.Clone(v)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// Record is the part of a stage's report (work/image/build.json,
// work/kmod/*.json) that says what was made from what: the object by
// digest and its Inputs. The signing steps attest exactly this.
type Record struct {
	// Ref is repository@sha256:….
	Ref    string `json:"ref"`
	Inputs Inputs `json:"inputs"`
	// NodeLint is a node image's node import check; image-sign attests it
	// as a byproduct.
	NodeLint *NodeLint `json:"nodeLint,omitempty"`
}

// NodeLint is the result of a node image's node import check.
type NodeLint struct {
	Rules    string   `json:"rules"`
	Pass     bool     `json:"pass"`
	Warnings []string `json:"warnings,omitempty"`
}

// NodeLintByproduct names the node import check among an attestation's
// runDetails.byproducts.
const NodeLintByproduct = "node-lint"

// ReadRecord reads the Record of a stage report.
func ReadRecord(path string) (Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Record{}, fmt.Errorf("reading build record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("decoding build record %s: %w", path, err)
	}
	if r.Ref == "" {
		return Record{}, fmt.Errorf("build record %s names no image", path)
	}
	if err := r.Inputs.Validate(); err != nil {
		return Record{}, fmt.Errorf("build record %s: %w", path, err)
	}
	return r, nil
}

// Prediction is the drift gate's prediction for an image: the name (and
// sha256 of the spec) MCO will give the pool's next rendered config once
// kiln's osImageURL MachineConfig names Image. image-sign attests it as a
// byproduct and records it in the workspace (work.PredictionFile);
// rollout checks its own prediction against it.
type Prediction struct {
	Image string `json:"image"`
	Name  string `json:"name"`
	Hash  string `json:"hash"`
}
