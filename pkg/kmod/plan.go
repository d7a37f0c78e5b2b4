package kmod

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/kmodbuild"
)

// Facts are what the cluster and the registry say, gathered by the step
// before deciding.
type Facts struct {
	// MCOSImageURL is the osImageURL of the pool's kmm-managed MachineConfig.
	MCOSImageURL string
	// ImageExists: osMapping.containerImage is in its registry.
	ImageExists bool
	// UnsignedExists: sign.unsignedImage is in its registry.
	UnsignedExists bool
	// Rebuild: the cluster is moving to a new y-stream and the ModuleDay0
	// has clusterUpgradeTriggerNodeUpgrade (the day-0 proposal's "Cluster upgrade"),
	// so an existing image, built for the old kernel, is made again.
	Rebuild bool
}

// Plan is what a run does for one ModuleDay0, and why.
type Plan struct {
	Build bool
	Sign  bool
	// BuildTarget is where the build pushes: containerImage, or the
	// unsigned image when a sign step follows.
	BuildTarget string
	// SignSource is the image whose modules are signed.
	SignSource string
	Reason     string
}

// Decide applies the day-0 proposal's trigger rules.
//
// Build runs only when all hold: the image differs from the MC's
// osImageURL, the image does not exist, and a build section is present.
// Sign runs only when all hold: the image differs from the MC's
// osImageURL, the unsigned image exists or a build section will make it,
// and a sign section is present. When both run, the build's output is the
// unsigned image; with no sign.unsignedImage that is containerImage's
// reference with "-unsigned" appended to the tag (KMM's convention).
//
// The kmod steps call Decide with neither ImageExists nor MCOSImageURL:
// the day-0 proposal's "the image exists" is a claim anyone with push access can
// make, so they replace it with a proof (kiln's attestation for the
// current inputs, and for kmod-sign each module's signer) of what sits at
// the target, and reuse it only then (BuildOptions.Run, SignOptions.Run).
func Decide(md *kmmv1beta1.ModuleDay0, f Facts) (Plan, error) {
	om := md.Spec.OSMapping
	switch {
	case f.Rebuild && om.Build == nil && om.Sign == nil:
		return Plan{}, fmt.Errorf("ModuleDay0 %s/%s: a cluster upgrade asks for a rebuild of %s, but there is no build or sign section", md.Namespace, md.Name, om.ContainerImage)
	case f.Rebuild:
		// The trigger decided from the ClusterVersion and the nodes.
	case om.ContainerImage == f.MCOSImageURL:
		return Plan{Reason: "containerImage is already the MachineConfig's osImageURL"}, nil
	case f.ImageExists:
		return Plan{Reason: "containerImage exists; nothing to build or sign"}, nil
	case om.Build == nil && om.Sign == nil:
		return Plan{}, fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.containerImage %s does not exist and there is no build or sign section to make it", md.Namespace, md.Name, om.ContainerImage)
	}
	p := Plan{Build: om.Build != nil, Sign: om.Sign != nil, BuildTarget: om.ContainerImage}
	if p.Sign {
		p.SignSource = om.Sign.UnsignedImage
		if p.SignSource == "" {
			ref, err := unsignedRef(om.ContainerImage)
			if err != nil {
				return Plan{}, fmt.Errorf("ModuleDay0 %s/%s: %w", md.Namespace, md.Name, err)
			}
			p.SignSource = ref
		}
		if p.Build {
			p.BuildTarget = p.SignSource
		} else if !f.UnsignedExists {
			return Plan{}, fmt.Errorf("ModuleDay0 %s/%s: spec.osMapping.sign.unsignedImage %s does not exist and there is no build section to make it", md.Namespace, md.Name, p.SignSource)
		}
	}
	switch {
	case p.Build && p.Sign:
		p.Reason = "build " + p.BuildTarget + ", then sign it into " + om.ContainerImage
	case p.Build:
		p.Reason = "build " + p.BuildTarget
	default:
		p.Reason = "sign " + p.SignSource + " into " + om.ContainerImage
	}
	return p, nil
}

// unsignedRef names the unsigned image after containerImage (KMM's
// convention, kmmv1beta1.DefaultUnsignedImage).
func unsignedRef(ref string) (string, error) { return kmmv1beta1.DefaultUnsignedImage(ref) }

// Payload are the payload's images the AUTO arguments resolve to.
type Payload struct {
	OSImage  string // rhel-coreos
	DTKImage string // driver-toolkit
}

// argRef is compiled on first use, not at every kiln-steps start.
var argRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`) })

// DockerfileArgs lists the variables a Dockerfile references ($X or ${X}),
// in order of first use. Comment lines are ignored.
func DockerfileArgs(dockerfile string) []string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(dockerfile, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		for _, m := range argRef().FindAllStringSubmatch(line, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
	}
	return out
}

// BuildArgs returns the build arguments for a ModuleDay0's Dockerfile.
// DTK_AUTO is refused without OS_AUTO: the payload's driver toolkit
// matches the payload's kernel, not the nodes' (the day-0 proposal).
func BuildArgs(md *kmmv1beta1.ModuleDay0, dockerfile string, p Payload, kernelFullVersion string) (map[string]string, error) {
	used := map[string]bool{}
	for _, a := range DockerfileArgs(dockerfile) {
		used[a] = true
	}
	if used[kmodbuild.ArgDTKAuto] && !used[kmodbuild.ArgOSAuto] {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: the Dockerfile uses %s without %s; the payload's driver toolkit only matches the payload's OS (the KMM day-0 proposal)", md.Namespace, md.Name, kmodbuild.ArgDTKAuto, kmodbuild.ArgOSAuto)
	}
	args := map[string]string{kmodbuild.ArgModName: md.Name}
	if used[kmodbuild.ArgOSAuto] {
		if p.OSImage == "" {
			return nil, fmt.Errorf("ModuleDay0 %s/%s: the Dockerfile uses %s but the payload names no rhel-coreos image", md.Namespace, md.Name, kmodbuild.ArgOSAuto)
		}
		args[kmodbuild.ArgOSAuto] = p.OSImage
	}
	if used[kmodbuild.ArgDTKAuto] {
		if p.DTKImage == "" {
			return nil, fmt.Errorf("ModuleDay0 %s/%s: the Dockerfile uses %s but the payload names no driver-toolkit image", md.Namespace, md.Name, kmodbuild.ArgDTKAuto)
		}
		args[kmodbuild.ArgDTKAuto] = p.DTKImage
	}
	if kernelFullVersion == "" {
		return nil, fmt.Errorf("ModuleDay0 %s/%s: the kernel version of the OS image is unknown", md.Namespace, md.Name)
	}
	// KMM passes the full version under both names; KERNEL_VERSION is kept
	// for Dockerfiles written against KMM's day-2 builds.
	args[kmodbuild.ArgKernelVersion] = kernelFullVersion
	args[kmodbuild.ArgKernelFullVersion] = kernelFullVersion
	return args, nil
}
