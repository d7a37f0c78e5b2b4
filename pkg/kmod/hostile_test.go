package kmod_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/kiln-dev/kiln/pkg/buildah"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

// registryCredential stands in for the pull secret in the registry-auth
// workspace: a hostile build must not find it either.
const registryCredential = "kiln-registry-credential-7f3e"

// hostileProbe is a ModuleDay0 author's Dockerfile that looks for kiln's
// keys everywhere it can think of, and writes what it found into the
// image it hands back to kiln to sign: the build secret its ModuleDay0
// lists (the control: reading works), the absolute paths of the Task's
// other workspaces, the same through /proc/self/root, /proc/1/root and
// /proc/1/cwd, the secrets mount's parents, the build context (COPY and a
// bind mount), and a grep of the whole visible filesystem.
func hostileProbe(ws string) string {
	paths := []string{}
	for _, p := range []string{"cosign-key/cosign.key", "cosign-key/cosign.password", "registry-auth/config.json"} {
		abs := filepath.Join(ws, p)
		paths = append(paths, abs, "/proc/self/root"+abs, "/proc/1/root"+abs, "/proc/1/cwd/"+p,
			"/run/secrets/../../"+p, "/run/secrets/../"+p, "/workspace/"+p, "/ctx/../"+p)
	}
	script := "exec >/probe.txt 2>&1; echo control:; cat /run/secrets/build-secret_token; echo; " +
		"for p in " + strings.Join(paths, " ") + "; do echo \"== $p\"; cat \"$p\"; done; " +
		// The patterns are split so the Dockerfile in the context does
		// not match itself.
		"a=ENCRYP; b=kiln-test; c=other.exa; echo == grep; busybox grep -rsl -e \"${a}TED\" -e \"${b}-pw\" -e \"${c}mple\"" +
		" /bin /etc /run /tmp /usr /var /root /home /opt /srv /mnt /workspace /ctx /ctx-bind /proc/1/root/tmp; " +
		"echo == context; ls -laR /ctx /ctx-bind; echo == environ; cat /proc/1/environ /proc/self/environ; true"
	return `ARG OS_AUTO
FROM ${OS_AUTO}
COPY . /ctx
RUN --mount=type=secret,id=build-secret_token --mount=type=bind,target=/ctx-bind sh -c '` + script + `'
`
}

// TestHostileDockerfileFindsNoKey: a ModuleDay0 author's Dockerfile, run
// by the real kmod-build step with real buildah, finds its own build
// secret and nothing else: not kiln's cosign key or password, not the
// registry credential, though all three sit in folders beside the build
// secrets, as Tekton mounts a Task's workspaces. The step never writes
// outside its work and results folders, and a ModuleDay0 whose secret
// names reach for the key is refused before anything is built or pushed.
func TestHostileDockerfileFindsNoKey(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	_, kver, err := env.KernelHeaders()
	if err != nil {
		t.Fatal(err)
	}
	osImage := env.PushOSImage(t, e.Registry.Ref("payload/rhel-coreos:hostile"), kver)
	f := newFixture(t, e, osImage, "", "")
	// The Task's /workspace: every folder the step is given, and the key
	// folders it is not, side by side.
	ws := t.TempDir()
	f.work, f.results, f.secrets = filepath.Join(ws, "work"), filepath.Join(ws, "results"), filepath.Join(ws, "build-secrets")
	writeFile(t, filepath.Join(f.secrets, "build-secret", "token"), buildSecretValue)
	keys := cosignKeys(t)
	for _, k := range []string{"cosign.key", "cosign.password"} {
		b, _ := os.ReadFile(filepath.Join(keys, k))
		writeFile(t, filepath.Join(ws, "cosign-key", k), string(b))
	}
	pub, _ := os.ReadFile(filepath.Join(keys, "cosign.pub"))
	writeFile(t, filepath.Join(ws, "public-key", "cosign.pub"), string(pub))
	f.cosign = filepath.Join(ws, "public-key")
	auth := base64.StdEncoding.EncodeToString([]byte("kiln:" + registryCredential))
	writeFile(t, filepath.Join(ws, "registry-auth", "config.json"), `{"auths":{"other.example":{"auth":"`+auth+`"}}}`)
	writeFile(t, filepath.Join(f.manifests, "dockerfile.yaml"), configMapYAML("kmm-kmod-dockerfile", "dockerfile", hostileProbe(ws)))
	f.md.Spec.OSMapping.Sign = nil
	key, _ := os.ReadFile(filepath.Join(ws, "cosign-key", "cosign.key"))
	secrets := [][]byte{key, []byte("kiln-test-pw"), []byte(auth)}

	t.Run("the build finds only its own secret", func(t *testing.T) {
		before := snapshotTree(t, ws)
		var log bytes.Buffer
		if err := buildOnly(t, f, &log); err != nil {
			t.Fatalf("kmod-build: %v\n%s", err, log.String())
		}
		files, raw := kmodtest.FlattenImage(t, pull(t, f.image(t)))
		probe := string(files["probe.txt"])
		if !strings.Contains(probe, "control:\n"+buildSecretValue) {
			t.Fatalf("the probe did not read its own build secret (the control); probe.txt:\n%s", probe)
		}
		for _, s := range secrets {
			if bytes.Contains(raw, s) {
				t.Errorf("the hostile build's image holds %.20q…; probe.txt:\n%s", s, probe)
			}
		}
		if strings.Contains(probe, "== grep\n/") {
			t.Errorf("the grep of the build's filesystem found a key file:\n%s", probe)
		}
		t.Logf("what the hostile build saw:\n%s", probe)
		assertOnlyWrote(t, ws, before, snapshotTree(t, ws), "work", "results")
	})

	for _, c := range []struct{ secret, rule string }{
		{"../cosign-key", "not a Secret name"},
		{"../registry-auth", "not a Secret name"},
		{ws + "/cosign-key", "not a Secret name"},
		{"linked", "outside"},
	} {
		t.Run("secret "+c.secret, func(t *testing.T) {
			mustSymlink(t, filepath.Join(ws, "cosign-key"), filepath.Join(f.secrets, "linked"))
			defer os.Remove(filepath.Join(f.secrets, "linked"))
			target := e.Registry.Ref("kmods/hostile-" + shortHash(c.secret) + ":1")
			md := f.md.DeepCopy()
			md.Spec.OSMapping.ContainerImage = target
			md.Spec.OSMapping.Build.Secrets = []corev1.LocalObjectReference{{Name: "build-secret"}, {Name: c.secret}}
			g := *f
			g.md, g.results = md, t.TempDir()
			before := snapshotTree(t, ws)
			var log bytes.Buffer
			err := buildOnly(t, &g, &log)
			want := `ModuleDay0 openshift-kmm/kiln-hello: spec.osMapping.build.secrets[1].name "` + c.secret + `": `
			if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), c.rule) {
				t.Fatalf("kmod-build = %v, want %q … %q", err, want, c.rule)
			}
			if code := exitcode.CodeOf(err); code != exitcode.ExitInputRejected {
				t.Errorf("exit code %d, want %d (input rejected)", code, exitcode.ExitInputRejected)
			}
			if strings.Contains(log.String(), "building ") {
				t.Errorf("a build started:\n%s", log.String())
			}
			ref, _ := name.ParseReference(target, name.Insecure)
			if _, err := remote.Head(ref); err == nil {
				t.Errorf("%s was pushed", target)
			}
			assertOnlyWrote(t, ws, before, snapshotTree(t, ws), "work", "results")
		})
	}
}

// buildOnly runs the kmod-build step alone, as its Task's first step
// does: no signing key is given to it.
func buildOnly(t *testing.T, f *fixture, out io.Writer) error {
	f.writeModuleDay0(t)
	o := &kmod.BuildOptions{
		Options:         f.stepOptions(),
		RegistryOptions: registry.RegistryOptions{Insecure: []string{f.reg.Host}, AuthFile: filepath.Join(filepath.Dir(f.work), "registry-auth", "config.json")},
		KubeOptions:     kube.KubeOptions{Source: "dir:" + f.manifests},
		OSImage:         f.osImage, SecretsDir: f.secrets,
		Buildah:  buildah.Buildah{Env: f.buildahEnv},
		Identity: f.identity(),
	}
	return o.Run(t.Context(), step.Streams{Out: out, Err: out})
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:4])
}

// snapshotTree records every path under root with its size and mode.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		// A folder's time changes when an allowed entry is added to it;
		// its mode, and every file's content, time and size, are compared.
		out[rel] = info.Mode().String()
		if !d.IsDir() {
			out[rel] += fmt.Sprintf(" %d %s", info.Size(), info.ModTime())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// assertOnlyWrote fails when anything under root changed outside the
// allowed top-level folders.
func assertOnlyWrote(t *testing.T, root string, before, after map[string]string, allowed ...string) {
	t.Helper()
	outside := func(m map[string]string) map[string]string {
		o := map[string]string{}
		for p, v := range m {
			top := strings.SplitN(p, string(filepath.Separator), 2)[0]
			if !slices.Contains(allowed, top) {
				o[p] = v
			}
		}
		return o
	}
	if d := cmp.Diff(outside(before), outside(after)); d != "" {
		t.Errorf("paths under %s outside %v changed (-before +after):\n%s", root, allowed, d)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
