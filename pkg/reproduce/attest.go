package reproduce

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	intoto "github.com/in-toto/in-toto-golang/in_toto"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/trust"
)

// Kinds of build reproduce rebuilds, by SLSA buildType.
var kinds = map[string]string{
	trust.BuildTypeNodeImage: "node-image",
	trust.BuildTypeKmodBuild: "kmod-build",
	trust.BuildTypeKmodSign:  "kmod-sign",
}

// Attested is what kiln's verified attestation says about one image.
type Attested struct {
	Ref    name.Digest
	Kind   string
	Inputs trust.Inputs
	// BuilderVersion is runDetails.builder.version: the kiln that built
	// the image ("" when the attestation does not say).
	BuilderVersion string
}

// attested verifies image's signature and attestations with id and
// returns the one kiln build they attest. No signature or attestation
// from id, or none of a kiln buildType about this digest, is a refusal
// (exit 3); a registry that cannot be reached or refuses the
// credentials is a failure, never a refusal.
func attested(ctx context.Context, r registry.Remote, image name.Digest, id trust.Identity) (*Attested, error) {
	sts, err := sign.Statements(ctx, r, image, id)
	if exitcode.IsFault(err) {
		// No answer about the image (unreachable, credentials, 5xx,
		// missing image): a failure, never a refusal.
		return nil, registry.Classify(err, "reading signatures of", image.String())
	}
	if err != nil {
		return nil, exitcode.Refused(fmt.Errorf("%s carries no kiln signature and attestation from %s: %w", image, id, err))
	}
	return pick(sts, image)
}

// pick returns the kiln build statement about image among sts. Two kiln
// statements that attest different inputs leave nothing to rebuild from.
func pick(sts []intoto.Statement, image name.Digest) (*Attested, error) {
	alg, hex, _ := strings.Cut(image.DigestStr(), ":")
	var found *Attested
	var seen []string
	for _, st := range sts {
		if !slices.ContainsFunc(st.Subject, func(s intoto.Subject) bool { return s.Digest[alg] == hex }) {
			seen = append(seen, "a statement about another digest")
			continue
		}
		in, err := trust.InputsOf(st)
		if err != nil {
			seen = append(seen, err.Error())
			continue
		}
		kind, ok := kinds[in.BuildType]
		if !ok {
			seen = append(seen, fmt.Sprintf("buildType %q", in.BuildType))
			continue
		}
		if err := in.Validate(); err != nil {
			seen = append(seen, err.Error())
			continue
		}
		a := &Attested{Ref: image, Kind: kind, Inputs: in, BuilderVersion: builderVersion(st)}
		if found != nil && found.Inputs.Diff(in) != "" {
			return nil, exitcode.Refused(fmt.Errorf("%s: kiln attested two different builds (%s); nothing to rebuild from", image, found.Inputs.Diff(in)))
		}
		found = a
	}
	if found == nil {
		why := "none"
		if len(seen) > 0 {
			why = strings.Join(seen, "; ")
		}
		return nil, exitcode.Refused(fmt.Errorf("%s: no verified attestation of a kiln build (node-image, kmod-build or kmod-sign) about this digest; found: %s", image, why))
	}
	return found, nil
}

// builderVersion reads runDetails.builder.version from a SLSA v1
// statement (trust.BuilderVersion's map): "kiln v0.1.0 (revision …)";
// "" when absent.
func builderVersion(st intoto.Statement) string {
	b, err := json.Marshal(st.Predicate)
	if err != nil {
		return ""
	}
	var p struct {
		RunDetails struct {
			Builder struct {
				Version map[string]string `json:"version"`
			} `json:"builder"`
		} `json:"runDetails"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return versionString(p.RunDetails.Builder.Version)
}

// versionString shows a builder version map: kiln's version and revision
// first, then any other entry.
func versionString(v map[string]string) string {
	var parts []string
	if k, ok := v["kiln"]; ok {
		parts = append(parts, k)
	}
	if r, ok := v["kiln-revision"]; ok {
		parts = append(parts, "(revision "+r+")")
	}
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if k != "kiln" && k != "kiln-revision" {
			parts = append(parts, k+" "+v[k])
		}
	}
	return strings.Join(parts, " ")
}
