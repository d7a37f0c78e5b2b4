// Package imagebuild builds the layered OS image (the CoreOS layering
// enhancement, https://github.com/openshift/enhancements/blob/master/enhancements/ocp-coreos-layering/ocp-coreos-layering.md).
//
// The fast path (Build) turns the rendered MachineConfig into one
// deterministic tar layer — Ignition files (data: URLs decoded, gunzipped,
// verification.hash checked over the decompressed content as Ignition
// does, modes and owners kept), directories, links, systemd units, dropins, the
// symlinks `systemctl enable` makes, and /etc/machine-config-daemon/currentconfig
// — and appends it to the base with go-containerregistry. Base blobs are
// mounted across repositories, never uploaded; each is read once, streamed,
// by the node import check (pkg/nodeimport), which runs over the whole
// image before anything is pushed, on both paths: an image a node could
// not import, or content a node must never get, fails the build with the
// file and the rule, as rejected input. With a node import cache
// (BuildInput.NodeCache, pkg/nodecache) a base is read only by the first
// build on it; later builds resume the check from its stored state and
// read only the layers above it, with the same findings. Identical inputs
// give an identical digest; the
// build's trust.Inputs (trust.NodeImage: base digest, rendered-config hash,
// kmod digests, pool, source, builder, build format) name a tag
// kiln-<Inputs.Fingerprint()>. The tag is only a hint: what it holds is
// reused, without a push, only when sign.Prove finds a signature and an
// attestation of exactly these inputs from kiln's identity; otherwise the
// image is rebuilt and the tag moved to it. Images are pushed by digest and
// tagged last, so a failure leaves no tag. A base that is an
// index gives an index with every platform built.
//
// The buildah path (BuildWithBuildah) is used for user Containerfile
// content, extensions, a kernelType swap and enabling units of the base: a
// generated Containerfile (GenerateContainerfile) built with
// `buildah bud --layers --timestamp 0`.
//
// Inputs are bounded (pkg/ignres): a rendered config over 1,572,864 bytes
// (MCO's cap) is refused before it is parsed, and its files may hold at most
// 64 MiB together once decompressed (ignres.MaxContent); a file is inflated
// once to check it and again straight into the layer, so no decompressed
// copy is kept beside the layer.
//
// Differences from MCO, each for a reason given where it is implemented:
//   - config goes in as a prebuilt layer, not by ignition-apply in a build;
//   - enabled: false cannot remove enablement links the base ships;
//   - user/group names other than root must be numeric ids (no base
//     /etc/passwd is read);
//   - files under /usr/local, /opt, /home, /root, /srv, /mnt are written to
//     their /var targets, where a build following CoreOS's symlinks puts them;
//   - the buildah path orders packages before config, for layer caching.
//
// It is a library below the stages: the image-build stage (pkg/osimage),
// kmod-build and reproduce import it; it imports no stage package. The
// buildah CLI itself is driven through pkg/buildah.
package imagebuild
