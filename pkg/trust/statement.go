package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"
	"github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/common"
	slsa1 "github.com/in-toto/in-toto-golang/in_toto/slsa_provenance/v1"
)

// Statement is the in-toto statement with a SLSA v1 provenance predicate
// that says subject was built from in. runID (the PipelineRun) goes in
// runDetails, not in the inputs: a rerun of the same inputs proves reuse.
// byproducts go in runDetails.byproducts, also outside the inputs: facts
// this run derived, such as the drift gate's predicted rendered config.
func Statement(subject name.Digest, in Inputs, runID string, byproducts ...Dependency) ([]byte, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	alg, hex, _ := strings.Cut(subject.DigestStr(), ":")
	params := make(map[string]any, len(in.Parameters))
	for k, v := range in.Parameters {
		params[k] = v
	}
	deps := make([]slsa1.ResourceDescriptor, 0, len(in.Dependencies))
	for _, d := range in.sortedDeps() {
		a, h, _ := strings.Cut(d.Digest, ":")
		deps = append(deps, slsa1.ResourceDescriptor{Name: d.Name, URI: d.URI, Digest: common.DigestSet{a: h}})
	}
	var by []slsa1.ResourceDescriptor
	for _, d := range byproducts {
		a, h, _ := strings.Cut(d.Digest, ":")
		by = append(by, slsa1.ResourceDescriptor{Name: d.Name, URI: d.URI, Digest: common.DigestSet{a: h}})
	}
	s := intoto.ProvenanceStatementSLSA1{
		StatementHeader: intoto.StatementHeader{
			Type:          intoto.StatementInTotoV01,
			PredicateType: slsa1.PredicateSLSAProvenance,
			Subject:       []intoto.Subject{{Name: subject.Context().Name(), Digest: common.DigestSet{alg: hex}}},
		},
		Predicate: slsa1.ProvenancePredicate{
			BuildDefinition: slsa1.ProvenanceBuildDefinition{
				BuildType: in.BuildType, ExternalParameters: params, ResolvedDependencies: deps,
			},
			RunDetails: slsa1.ProvenanceRunDetails{
				Builder:       slsa1.Builder{ID: BuilderID, Version: BuilderVersion()},
				BuildMetadata: slsa1.BuildMetadata{InvocationID: runID},
				Byproducts:    by,
			},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encoding provenance: %w", err)
	}
	return b, nil
}

// ErrNotProven says a registry object carries no attestation, from the
// trusted identity, that binds the wanted inputs. Callers rebuild or
// re-sign; the wrapped message says why.
var ErrNotProven = errors.New("no kiln attestation for these inputs")

// InputsOf reads the Inputs a statement attests, for statements of kiln's
// own build types.
func InputsOf(st intoto.Statement) (Inputs, error) {
	if st.PredicateType != slsa1.PredicateSLSAProvenance {
		return Inputs{}, fmt.Errorf("predicate type %q is not SLSA v1 provenance", st.PredicateType)
	}
	b, err := json.Marshal(st.Predicate)
	if err != nil {
		return Inputs{}, err
	}
	var p struct {
		BuildDefinition struct {
			BuildType            string         `json:"buildType"`
			ExternalParameters   map[string]any `json:"externalParameters"`
			ResolvedDependencies []struct {
				Name   string            `json:"name"`
				URI    string            `json:"uri"`
				Digest map[string]string `json:"digest"`
			} `json:"resolvedDependencies"`
		} `json:"buildDefinition"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return Inputs{}, fmt.Errorf("decoding the provenance predicate: %w", err)
	}
	in := Inputs{BuildType: p.BuildDefinition.BuildType, Parameters: map[string]string{}}
	for k, v := range p.BuildDefinition.ExternalParameters {
		s, ok := v.(string)
		if !ok {
			return Inputs{}, fmt.Errorf("externalParameters.%s is not a string", k)
		}
		in.Parameters[k] = s
	}
	for _, d := range p.BuildDefinition.ResolvedDependencies {
		if len(d.Digest) != 1 {
			return Inputs{}, fmt.Errorf("resolvedDependencies %q has %d digests, want one", d.Name, len(d.Digest))
		}
		for alg, hex := range d.Digest {
			in.Dependencies = append(in.Dependencies, Dependency{Name: d.Name, URI: d.URI, Digest: alg + ":" + hex})
		}
	}
	return in, nil
}

// Binds checks that st is about subject and attests exactly want. The
// error wraps ErrNotProven and names the first difference.
func Binds(st intoto.Statement, subject name.Digest, want Inputs) error {
	alg, hex, _ := strings.Cut(subject.DigestStr(), ":")
	about := false
	for _, s := range st.Subject {
		if s.Digest[alg] == hex {
			about = true
		}
	}
	if !about {
		return fmt.Errorf("%w: the attestation is about another digest", ErrNotProven)
	}
	got, err := InputsOf(st)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotProven, err)
	}
	if d := want.Diff(got); d != "" {
		return fmt.Errorf("%w: %s", ErrNotProven, d)
	}
	return nil
}

// BuilderVersion is runDetails.builder.version: kiln's module version and
// the VCS revision stamped into the binary. It is not an input (the build
// formats are): a kiln that builds the same bytes reuses and reproduces
// what another version attested; a reader learns which kiln to run to
// repeat a build exactly.
func BuilderVersion() map[string]string {
	v := map[string]string{"kiln": "(devel)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if bi.Main.Version != "" {
		v["kiln"] = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			v["kiln-revision"] = s.Value
		}
	}
	return v
}
