package buildah

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// DefaultBuildah is the buildah binary every step runs unless told
// otherwise: buildah on PATH.
const DefaultBuildah = "buildah"

// Buildah runs the buildah CLI (the proxy refuses buildah's Go module).
type Buildah struct {
	// Bin is the buildah binary; empty means "buildah" on PATH.
	Bin string
	// Env is buildah's environment; nil means the process's.
	Env []string
	// Root, when set, is buildah's storage: every call gets the global
	// --root <Root>/storage --runroot <Root>/run, so a rebuild starts from
	// empty storage whatever Env's storage.conf names.
	Root string
}

// Bud is a generic `buildah bud` of a caller's Containerfile, for builds
// kiln does not generate (kmod multi-stage Dockerfiles).
type Bud struct {
	// Dir is the build context; Containerfile is a path to the file.
	Dir, Containerfile string
	BuildArgs          map[string]string
	// Secrets are buildah `--secret id=ID,src=FILE`: mounted for RUN steps
	// that ask (RUN --mount=type=secret,id=ID), never stored in a layer.
	Secrets map[string]string
	Labels  map[string]string
	// Annotations go on the image manifest.
	Annotations map[string]string
	// Pulls are the image references the build pulls (its FROMs), so that
	// their registries get the registry flags.
	Pulls []string
	// Bases are the images by digest (repository@sha256:…) whose layers
	// the result starts with: those keep the base's compressed blobs.
	Bases []string
	// Env are `--env K=V` for every stage: unlike an undeclared
	// --build-arg, they reach every RUN step (and land in the image
	// config's Env).
	Env map[string]string
	// Target is where the result is pushed.
	Target string
	// Check, when set, runs on the built image before anything is pushed;
	// its error stops the push (image-build's node import check).
	Check func(v1.Image) error
	// OnStep, when set, gets each of buildah's "STEP n/m: …" lines as the
	// build reaches it (BudSteps), so a long build shows where it is.
	OnStep func(line string)
}

// BudAndPush builds with `buildah bud --layers --timestamp 0`, writes the
// result to an OCI layout and pushes it with kiln's own registry client
// (see BudLocal for why not `buildah push`), returning the pushed digest.
// A failed build reports the tail of buildah's log; nothing is pushed
// then. The manifest PUT to b.Target (a tag) comes last, so a failed push
// leaves no tag.
func (bb Buildah) BudAndPush(ctx context.Context, r registry.Remote, b Bud) (v1.Hash, error) {
	target, err := r.ParseRef(b.Target)
	if err != nil {
		return v1.Hash{}, err
	}
	tmp, err := os.MkdirTemp("", "kiln-bud-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(tmp)
	out, err := bb.BudLocal(ctx, r, b, tmp)
	if err != nil {
		return v1.Hash{}, err
	}
	if b.Check != nil {
		if err := b.Check(out.Image); err != nil {
			return v1.Hash{}, err
		}
	}
	if err := r.Write(ctx, target, out.Image); err != nil {
		return v1.Hash{}, registry.Classify(err, "pushing image", target.String())
	}
	return out.Digest, nil
}

// bud runs `buildah bud` for b into local storage and returns the local
// name of the result; the caller removes it. tmp is a folder the caller
// removes.
func (bb Buildah) bud(ctx context.Context, r registry.Remote, b Bud, tmp string) (string, error) {
	sum := sha256.Sum256([]byte(b.Target))
	local := "localhost/kiln-bud:" + hex.EncodeToString(sum[:8])
	// --identity-label=false: buildah's io.buildah.version label would make
	// the bytes depend on which buildah built them, so two machines with
	// different buildah releases would never agree on a digest.
	args := []string{"bud", "--layers", "--timestamp", "0", "--identity-label=false", "--format", "oci", "-f", b.Containerfile, "-t", local}
	for _, k := range sortedKeys(b.BuildArgs) {
		args = append(args, "--build-arg", k+"="+b.BuildArgs[k])
	}
	for _, k := range sortedKeys(b.Env) {
		args = append(args, "--env", k+"="+b.Env[k])
	}
	for _, k := range sortedKeys(b.Secrets) {
		args = append(args, "--secret", "id="+k+",src="+b.Secrets[k])
	}
	for _, k := range sortedKeys(b.Labels) {
		args = append(args, "--label", k+"="+b.Labels[k])
	}
	for _, k := range sortedKeys(b.Annotations) {
		args = append(args, "--annotation", k+"="+b.Annotations[k])
	}
	pull, err := pullCall(r, b.Pulls, tmp)
	if err != nil {
		return "", fmt.Errorf("building %s with buildah: %w", b.Target, err)
	}
	var steps io.Writer
	if b.OnStep != nil {
		steps = &BudSteps{Fn: b.OnStep}
	}
	if out, err := bb.runEnvTo(ctx, pull.env, steps, append(append(args, pull.args...), b.Dir)...); err != nil {
		return "", fmt.Errorf("building %s with buildah: %w\n%s", b.Target, err, tail(out, 15))
	}
	return local, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func (bb Buildah) run(ctx context.Context, args ...string) (string, error) {
	return bb.runEnv(ctx, nil, args...)
}

// runEnv runs buildah with extra variables added to its environment.
func (bb Buildah) runEnv(ctx context.Context, extra []string, args ...string) (string, error) {
	return bb.runEnvTo(ctx, extra, nil, args...)
}

// runEnvTo is runEnv that also streams buildah's output to live as it
// comes, when live is set.
func (bb Buildah) runEnvTo(ctx context.Context, extra []string, live io.Writer, args ...string) (string, error) {
	bin := bb.Bin
	if bin == "" {
		bin = "buildah"
	}
	if bb.Root != "" {
		args = append([]string{"--root", filepath.Join(bb.Root, "storage"), "--runroot", filepath.Join(bb.Root, "run")}, args...)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = bb.Env
	if len(extra) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(slices.Clip(cmd.Env), extra...)
	}
	var out bytes.Buffer
	var w io.Writer = &out
	if live != nil {
		// One writer for both streams: exec then calls it from one
		// goroutine at a time.
		w = io.MultiWriter(&out, live)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	return out.String(), err
}

// tail returns the last n lines of s: buildah's error is at the end.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
