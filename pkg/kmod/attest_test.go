package kmod_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/kmod"
	"github.com/kiln-dev/kiln/pkg/kube"
	"github.com/kiln-dev/kiln/pkg/sign"
	"github.com/kiln-dev/kiln/pkg/step"
	"github.com/kiln-dev/kiln/pkg/trust"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// TestKmodAttestSignsOnlyWhatThisModuleDay0Built: the step that holds the
// cosign key signs kmod-build's image only when the report names an image
// by digest in the ModuleDay0's build target repository, with inputs of
// this ModuleDay0 and target; anything else is refused before any key is
// read or registry reached (the key path given does not exist).
func TestKmodAttestSignsOnlyWhatThisModuleDay0Built(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const target = "registry.example/kmods/rhcos:414"
	md := &kmmv1beta1.ModuleDay0{
		TypeMeta:   metav1.TypeMeta{APIVersion: kmmv1beta1.GroupVersion.String(), Kind: "ModuleDay0"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-kmm", Name: "kiln-hello"},
		Spec: kmmv1beta1.ModuleDay0Spec{
			MachineConfigPoolSelector: map[string]string{"node-role.kubernetes.io/worker": ""},
			OSMapping:                 kmmv1beta1.OSMapping{ContainerImage: target, Build: &kmmv1beta1.Build{}},
		},
	}
	inputs := func(module, tgt string) *trust.Inputs {
		df := "FROM scratch\n"
		sum := sha256.Sum256([]byte(df))
		in, err := trust.KmodBuild{Module: module, Target: tgt, Dockerfile: df, DockerfileHash: "sha256:" + hex.EncodeToString(sum[:]),
			OSImage: "registry.example/os@" + digest, KernelVersion: "6.1.0"}.Inputs()
		if err != nil {
			t.Fatal(err)
		}
		return &in
	}
	cases := []struct {
		name string
		rep  workspace.KmodReport
		want string
	}{
		{
			name: "an image in another repository",
			rep:  workspace.KmodReport{Image: "registry.example/elsewhere@" + digest, Digest: digest, Inputs: inputs("openshift-kmm/kiln-hello", target)},
			want: "image registry.example/elsewhere@" + digest + " is not in the build target's repository registry.example/kmods/rhcos",
		},
		{
			name: "inputs of another ModuleDay0",
			rep:  workspace.KmodReport{Image: "registry.example/kmods/rhcos@" + digest, Digest: digest, Inputs: inputs("other/module", target)},
			want: "inputs of ModuleDay0 other/module for target " + target + ", want openshift-kmm/kiln-hello for " + target,
		},
		{
			name: "a digest that disagrees with the image",
			rep:  workspace.KmodReport{Image: "registry.example/kmods/rhcos@" + digest, Digest: "sha256:22", Inputs: inputs("openshift-kmm/kiln-hello", target)},
			want: "disagree",
		},
		{
			name: "an image by tag",
			rep:  workspace.KmodReport{Image: target, Digest: digest, Inputs: inputs("openshift-kmm/kiln-hello", target)},
			want: `image "` + target + `"`,
		},
		{
			name: "no inputs",
			rep:  workspace.KmodReport{Image: "registry.example/kmods/rhcos@" + digest, Digest: digest},
			want: "no inputs recorded",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := t.TempDir()
			ws := workspace.Workspace{Root: work}
			b, _ := json.Marshal(md)
			writeFile(t, ws.ModuleDay0Path(), string(b))
			b, _ = json.Marshal(c.rep)
			writeFile(t, filepath.Join(ws.StageDir(workspace.StageKmodBuild), workspace.KmodBuildFile), string(b))
			o := &kmod.AttestOptions{
				Options:     step.Options{Work: work, ResultsDir: t.TempDir(), Pool: "worker"},
				KubeOptions: kube.KubeOptions{Source: "dir:" + t.TempDir()},
				Attest:      sign.AttestOptions{SigningOptions: sign.SigningOptions{KeyPath: filepath.Join(t.TempDir(), "absent.key")}},
			}
			var out bytes.Buffer
			err := o.Run(t.Context(), step.Streams{Out: &out, Err: &out})
			prefix := "ModuleDay0 openshift-kmm/kiln-hello: kmod-build's report build.json: "
			if err == nil || !strings.HasPrefix(err.Error(), prefix) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("kmod-attest = %v, want %q … %q", err, prefix, c.want)
			}
			if code := exitcode.CodeOf(err); code != exitcode.ExitInputRejected {
				t.Errorf("exit code %d, want %d", code, exitcode.ExitInputRejected)
			}
		})
	}
}
