package work

import "github.com/kiln-dev/kiln/pkg/trust"

// Reports of the kmod stages in kmod/ (KmodReport each); kmod-sign's
// image, else kmod-build's, is the layered image's base (KmodImage).
const (
	KmodBuildFile = "build.json"
	KmodSignFile  = "sign.json"
)

// KmodReport is what kmod-build and kmod-sign leave in work/kmod/.
type KmodReport struct {
	Image  string `json:"image"`
	Digest string `json:"digest"`
	Kernel string `json:"kernelFullVersion,omitempty"`
	// Signed are the modules that carry a signature by the current
	// certificate: signed in this run, or checked one by one in a reused
	// image. Never filled from what a registry claims.
	Signed []string `json:"signed,omitempty"`
	// Inputs are what the image was made from, as attested.
	Inputs *trust.Inputs `json:"inputs,omitempty"`
	// Reused: the image was proven (attestation and, for kmod-sign, every
	// module's signer) and not made again.
	Reused bool `json:"reused,omitempty"`
	// ReuseRejected says why what sat at the target was not reused.
	ReuseRejected string `json:"reuseRejected,omitempty"`
	// Placement is where kmod-sign put the modules and firmware, when it
	// signed in this run.
	Placement *Placement `json:"placement,omitempty"`
}

// Move is one file kiln relocates: From as the build wrote it, To where
// the node finds it; both absolute.
type Move struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Signed bool   `json:"signed,omitempty"`
}

// Placement is what kmod-sign did to the unsigned image's layout.
type Placement struct {
	// Kernel is the kernel the modules were built for and placed under.
	Kernel string `json:"kernel"`
	// Modules and Firmware are the files moved, sorted by To.
	Modules  []Move `json:"modules"`
	Firmware []Move `json:"firmware,omitempty"`
	// Depmod are the files depmod wrote under the kernel's folder.
	Depmod []string `json:"depmod,omitempty"`
}
