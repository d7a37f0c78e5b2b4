package trust

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// The decoders below turn attested Inputs back into the description they
// were made from, so that a build can be repeated from its attestation
// alone (kiln-steps reproduce). Each one checks the round trip: the
// description must give exactly the attested Inputs again, or this kiln
// would build something other than what was attested (an older or newer
// build format, a parameter it does not know), and the error says which.

// NodeImageOf decodes the Inputs of a node image.
func NodeImageOf(in Inputs) (NodeImage, error) {
	if in.BuildType != BuildTypeNodeImage {
		return NodeImage{}, fmt.Errorf("decoding node image inputs: buildType %q, want %q", in.BuildType, BuildTypeNodeImage)
	}
	p := in.Parameters
	n := NodeImage{
		Pool: p["pool"], BaseImage: p["baseImage"], RenderedName: p["renderedConfig"],
		RenderedHash: p["renderedConfigHash"], KmodDigests: splitList(p["kmodDigests"], ","),
		Source: p["source"], Builder: p["builder"], BuildContext: p["buildContext"],
		ExtensionsImage: p["extensionsImage"], Containerfile: p["containerfile"],
		UserContainerfile: p["userContainerfile"], NodeLint: p["nodeLint"],
	}
	return n, roundTrip("node image", in, n.Inputs)
}

// KmodBuildOf decodes the Inputs of a kmod-build image.
func KmodBuildOf(in Inputs) (KmodBuild, error) {
	if in.BuildType != BuildTypeKmodBuild {
		return KmodBuild{}, fmt.Errorf("decoding kmod build inputs: buildType %q, want %q", in.BuildType, BuildTypeKmodBuild)
	}
	p := in.Parameters
	k := KmodBuild{
		Module: p["module"], Target: p["target"], DockerfileHash: p["dockerfileHash"], Dockerfile: p["dockerfile"],
		OSImage: p["osImage"], DTKImage: p["dtkImage"], KernelVersion: p["kernelVersion"],
		Secrets: splitList(p["secrets"], ","), BuildArgs: map[string]string{},
	}
	for _, kv := range splitList(p["buildArgs"], "\n") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return KmodBuild{}, fmt.Errorf("decoding kmod build inputs: build argument %q has no '='", kv)
		}
		k.BuildArgs[name] = value
	}
	return k, roundTrip("kmod build", in, k.Inputs)
}

// KmodSignOf decodes the Inputs of a kmod-sign image.
func KmodSignOf(in Inputs) (KmodSign, error) {
	if in.BuildType != BuildTypeKmodSign {
		return KmodSign{}, fmt.Errorf("decoding kmod sign inputs: buildType %q, want %q", in.BuildType, BuildTypeKmodSign)
	}
	p := in.Parameters
	k := KmodSign{
		Module: p["module"], Target: p["target"], Unsigned: p["unsignedImage"],
		CertHash: p["certificateHash"], CertSerial: p["certificateSerial"], Hash: p["hash"],
		FilesToSign: splitList(p["filesToSign"], "\n"), KernelVersion: p["kernelVersion"],
	}
	return k, roundTrip("kmod sign", in, k.Inputs)
}

func roundTrip(kind string, attested Inputs, encode func() (Inputs, error)) error {
	again, err := encode()
	if err != nil {
		return fmt.Errorf("decoding %s inputs: %w", kind, err)
	}
	if d := again.Diff(attested); d != "" {
		return fmt.Errorf("decoding %s inputs: this kiln would record other inputs (%s build format %s): %s",
			kind, attested.BuildType, attested.Parameters["format"], d)
	}
	return nil
}

// splitList is the inverse of joining with sep; "" is the empty list.
func splitList(s, sep string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, sep)
}

func sha256Of(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
