package trust

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// NodeImage is what a pool's layered OS image is built from. Every field
// ends up in the image's bytes (layer, labels, annotations), so every field
// is an input.
type NodeImage struct {
	Pool string
	// BaseImage is the image layered on, repository@sha256:… (the payload's
	// OS image, or this run's kmod image).
	BaseImage string
	// RenderedName and RenderedHash identify the rendered config: its name
	// is in a label, the sha256 of its normalised form is the layer's source.
	RenderedName string
	RenderedHash string
	// KmodDigests are the kmod images baked into BaseImage.
	KmodDigests []string
	// Source is the org.opencontainers.image.source annotation.
	Source string
	// Builder is "fast" (layer append) or "buildah".
	Builder string
	// BuildContext is the sha256 of the buildah path's Containerfile and
	// context (extensions image, user content); empty on the fast path.
	BuildContext string
	// ExtensionsImage is the payload's extensions image the buildah path
	// mounts, repository@sha256:…; empty on the fast path.
	ExtensionsImage string
	// Containerfile is the buildah path's generated Containerfile as built,
	// but for the fingerprint label, which these inputs determine;
	// UserContainerfile is the user's content it ends with. Both are
	// recorded whole, not only hashed, so that anyone can rebuild from the
	// attestation and read what was built.
	Containerfile, UserContainerfile string
	// NodeLint names the node import rules the image is checked against
	// before it is pushed (pkg/nodeimport.RulesVersion). kiln never pushes
	// or signs an image that fails them, so an attestation naming them
	// says the image passed; rollout refuses an image whose attestation
	// names none.
	NodeLint string
}

// Inputs turns the description into the Inputs image-build reuses by and
// image-sign attests.
func (n NodeImage) Inputs() (Inputs, error) {
	if n.Pool == "" || n.RenderedName == "" || n.RenderedHash == "" || n.Source == "" {
		return Inputs{}, fmt.Errorf("node image inputs: pool, rendered config, its hash and source are required")
	}
	if n.Builder != "fast" && n.Builder != "buildah" {
		return Inputs{}, fmt.Errorf("node image inputs: builder %q, want fast or buildah", n.Builder)
	}
	base, err := imageDep("base-image", n.BaseImage)
	if err != nil {
		return Inputs{}, fmt.Errorf("node image inputs: %w", err)
	}
	deps := []Dependency{base, {Name: "rendered-config", URI: "machineconfig:" + n.RenderedName, Digest: n.RenderedHash}}
	for _, k := range slices.Compact(slices.Sorted(slices.Values(n.KmodDigests))) {
		deps = append(deps, Dependency{Name: "kmod-image", Digest: k})
	}
	if n.ExtensionsImage != "" {
		ext, err := imageDep("extensions-image", n.ExtensionsImage)
		if err != nil {
			return Inputs{}, fmt.Errorf("node image inputs: %w", err)
		}
		deps = append(deps, ext)
	}
	in := Inputs{BuildType: BuildTypeNodeImage, Dependencies: deps, Parameters: map[string]string{
		"format": NodeImageFormat, "pool": n.Pool, "baseImage": n.BaseImage,
		"renderedConfig": n.RenderedName, "renderedConfigHash": n.RenderedHash,
		"kmodDigests": sortedList(n.KmodDigests), "source": n.Source,
		"builder": n.Builder, "buildContext": n.BuildContext,
		"extensionsImage": n.ExtensionsImage, "containerfile": n.Containerfile,
		"userContainerfile": n.UserContainerfile, "nodeLint": n.NodeLint,
	}}
	return in, in.Validate()
}

// KmodBuild is what kmod-build's (unsigned) kernel-module image is built
// from: the ModuleDay0's Dockerfile and build arguments on the payload's
// OS and driver-toolkit images for one kernel.
type KmodBuild struct {
	// Module is namespace/name of the ModuleDay0.
	Module string
	// Target is the image reference the build pushes to (by tag).
	Target string
	// DockerfileHash is the sha256 of the Dockerfile's bytes; Dockerfile
	// the bytes themselves, recorded so the build can be repeated from the
	// attestation alone.
	DockerfileHash, Dockerfile string
	// BuildArgs are the --build-arg values (OS_AUTO, DTK_AUTO, KERNEL_…).
	BuildArgs map[string]string
	// OSImage and DTKImage are repository@sha256:….
	OSImage, DTKImage string
	KernelVersion     string
	// Secrets names the build secrets by id; their content is not an
	// input kiln can record without disclosing it.
	Secrets []string
}

// Inputs of a kmod build.
func (k KmodBuild) Inputs() (Inputs, error) {
	if k.Module == "" || k.Target == "" || k.DockerfileHash == "" || k.KernelVersion == "" {
		return Inputs{}, fmt.Errorf("kmod build inputs: module, target, Dockerfile hash and kernel version are required")
	}
	if h := sha256Of(k.Dockerfile); h != k.DockerfileHash {
		return Inputs{}, fmt.Errorf("kmod build inputs: the Dockerfile's sha256 is %s, not the recorded %s", h, k.DockerfileHash)
	}
	os, err := imageDep("os-image", k.OSImage)
	if err != nil {
		return Inputs{}, fmt.Errorf("kmod build inputs: %w", err)
	}
	deps := []Dependency{os, {Name: "dockerfile", Digest: k.DockerfileHash}}
	if k.DTKImage != "" {
		dtk, err := imageDep("driver-toolkit", k.DTKImage)
		if err != nil {
			return Inputs{}, fmt.Errorf("kmod build inputs: %w", err)
		}
		deps = append(deps, dtk)
	}
	var args []string
	for _, a := range slices.Sorted(maps.Keys(k.BuildArgs)) {
		args = append(args, a+"="+k.BuildArgs[a])
	}
	in := Inputs{BuildType: BuildTypeKmodBuild, Dependencies: deps, Parameters: map[string]string{
		"format": KmodBuildFormat, "module": k.Module, "target": k.Target,
		"dockerfileHash": k.DockerfileHash, "dockerfile": k.Dockerfile, "buildArgs": strings.Join(args, "\n"),
		"osImage": k.OSImage, "dtkImage": k.DTKImage, "kernelVersion": k.KernelVersion,
		"secrets": sortedList(k.Secrets),
	}}
	return in, in.Validate()
}

// KmodSign is what kmod-sign's image is made from: the unsigned image and
// the module-signing certificate, for the files filesToSign names.
type KmodSign struct {
	Module string
	// Target is the signed image's reference (spec.osMapping.containerImage).
	Target string
	// Unsigned is the image whose modules were signed, repository@sha256:….
	Unsigned string
	// CertHash is the sha256 of the signing certificate's DER; CertSerial
	// its serial number in hex. The certificate is public.
	CertHash, CertSerial string
	// Hash is the signature's digest algorithm (sha256, sha384, sha512).
	Hash          string
	FilesToSign   []string
	KernelVersion string
}

// Inputs of a kmod signing.
func (k KmodSign) Inputs() (Inputs, error) {
	if k.Module == "" || k.Target == "" || k.CertHash == "" || k.Hash == "" || len(k.FilesToSign) == 0 {
		return Inputs{}, fmt.Errorf("kmod sign inputs: module, target, certificate, hash and files to sign are required")
	}
	unsigned, err := imageDep("unsigned-image", k.Unsigned)
	if err != nil {
		return Inputs{}, fmt.Errorf("kmod sign inputs: %w", err)
	}
	in := Inputs{BuildType: BuildTypeKmodSign, Dependencies: []Dependency{
		unsigned, {Name: "signing-certificate", Digest: k.CertHash},
	}, Parameters: map[string]string{
		"format": KmodSignFormat, "module": k.Module, "target": k.Target,
		"unsignedImage": k.Unsigned, "certificateHash": k.CertHash, "certificateSerial": k.CertSerial,
		"hash": k.Hash, "filesToSign": strings.Join(k.FilesToSign, "\n"), "kernelVersion": k.KernelVersion,
	}}
	return in, in.Validate()
}
