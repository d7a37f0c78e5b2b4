package signing

import (
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// VerifyResult is what `kiln-steps verify -o json` prints: the image, the
// decision, the node policy files written and, for a refusal, why.
type VerifyResult struct {
	Image    string `json:"image"`
	Verified bool   `json:"verified"`
	// Policy and Registries are the policy.json and registries.d
	// fragment written for nodes.
	Policy     string `json:"policy,omitempty"`
	Registries string `json:"registries,omitempty"`
	// Reason is why the image was refused, escaped (termsafe): it
	// carries a registry's or a signature's text.
	Reason string `json:"reason,omitempty"`
}

// Result returns the last Run's decision, or nil when it did not reach
// one (bad flags, no registry settings).
func (o *VerifyOptions) Result() any {
	if o.result == nil {
		return nil
	}
	return o.result
}

func newVerifyResult(image string, files *sign.PolicyFiles, verr error) *VerifyResult {
	r := &VerifyResult{Image: image, Verified: verr == nil}
	if files != nil {
		r.Policy, r.Registries = files.Policy, files.Registries
	}
	if verr != nil {
		r.Reason = termsafe.Escape(verr.Error())
	}
	return r
}
