package trust

import (
	"strings"
	"testing"
)

const dockerfile = "FROM ${OS_AUTO}\nCOPY a.ko /opt/lib/modules/\n"

func sampleKinds(t *testing.T) (NodeImage, NodeImage, KmodBuild, KmodSign) {
	t.Helper()
	fast := NodeImage{
		Pool: "worker", BaseImage: "r.example/os@sha256:" + strings.Repeat("a", 64), RenderedName: "rendered-worker-1",
		RenderedHash: "sha256:" + strings.Repeat("b", 64), Source: "https://github.com/kiln-dev/kiln", Builder: "fast",
	}
	bud := fast
	bud.Builder, bud.BuildContext = "buildah", "sha256:"+strings.Repeat("c", 64)
	bud.ExtensionsImage = "r.example/ext@sha256:" + strings.Repeat("d", 64)
	bud.KmodDigests = []string{"sha256:" + strings.Repeat("e", 64), "sha256:" + strings.Repeat("f", 64)}
	bud.Containerfile, bud.UserContainerfile = "FROM base\nRUN true\n", "RUN true\n"
	kb := KmodBuild{
		Module: "openshift-kmm/hello", Target: "r.example/kmods:1", Dockerfile: dockerfile, DockerfileHash: sha256Of(dockerfile),
		BuildArgs: map[string]string{"KERNEL_FULL_VERSION": "6.1.0", "OS_AUTO": "r.example/os@sha256:" + strings.Repeat("a", 64)},
		OSImage:   "r.example/os@sha256:" + strings.Repeat("a", 64), KernelVersion: "6.1.0", Secrets: []string{"s1", "s2"},
	}
	ks := KmodSign{
		Module: "openshift-kmm/hello", Target: "r.example/kmods:1", Unsigned: "r.example/kmods@sha256:" + strings.Repeat("1", 64),
		CertHash: "sha256:" + strings.Repeat("2", 64), CertSerial: "0a", Hash: "sha256",
		FilesToSign: []string{"/opt/lib/modules/6.1.0/a.ko", "/opt/lib/modules/6.1.0/b.ko"}, KernelVersion: "6.1.0",
	}
	return fast, bud, kb, ks
}

func TestDecodersGiveBackTheAttestedInputs(t *testing.T) {
	fast, bud, kb, ks := sampleKinds(t)
	for name, encode := range map[string]func() (Inputs, error){
		"node image fast": fast.Inputs, "node image buildah": bud.Inputs, "kmod build": kb.Inputs, "kmod sign": ks.Inputs,
	} {
		t.Run(name, func(t *testing.T) {
			in, err := encode()
			if err != nil {
				t.Fatal(err)
			}
			var again Inputs
			switch in.BuildType {
			case BuildTypeNodeImage:
				n, err := NodeImageOf(in)
				if err != nil {
					t.Fatal(err)
				}
				again, _ = n.Inputs()
			case BuildTypeKmodBuild:
				k, err := KmodBuildOf(in)
				if err != nil {
					t.Fatal(err)
				}
				again, _ = k.Inputs()
			case BuildTypeKmodSign:
				k, err := KmodSignOf(in)
				if err != nil {
					t.Fatal(err)
				}
				again, _ = k.Inputs()
			}
			if again.Fingerprint() != in.Fingerprint() {
				t.Errorf("decoded inputs differ: %s", in.Diff(again))
			}
		})
	}
}

func TestDecodersRefuseInputsThisKilnWouldNotRecord(t *testing.T) {
	fast, _, kb, _ := sampleKinds(t)
	nodeIn, _ := fast.Inputs()
	kmodIn, _ := kb.Inputs()
	extra := nodeIn
	extra.Parameters = map[string]string{"future": "x"}
	for k, v := range nodeIn.Parameters {
		extra.Parameters[k] = v
	}
	otherFormat := kmodIn
	otherFormat.Parameters = map[string]string{}
	for k, v := range kmodIn.Parameters {
		otherFormat.Parameters[k] = v
	}
	otherFormat.Parameters["format"] = "kiln-kmod-build/0"
	tampered := kmodIn
	tampered.Parameters = map[string]string{}
	for k, v := range kmodIn.Parameters {
		tampered.Parameters[k] = v
	}
	tampered.Parameters["dockerfile"] = "FROM elsewhere\n"
	for _, tc := range []struct {
		name, want string
		decode     func() error
	}{
		{"unknown parameter", "parameter future", func() error { _, err := NodeImageOf(extra); return err }},
		{"other build format", "kiln-kmod-build/0", func() error { _, err := KmodBuildOf(otherFormat); return err }},
		{"Dockerfile not matching its hash", "not the recorded", func() error { _, err := KmodBuildOf(tampered); return err }},
		{"wrong build type", "want \"" + BuildTypeKmodSign, func() error { _, err := KmodSignOf(nodeIn); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.decode()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func FuzzKmodBuildOf(f *testing.F) {
	f.Add("KERNEL_FULL_VERSION=6.1.0\nOS_AUTO=x", "s1,s2", dockerfile)
	f.Add("no-equals", "", "")
	f.Fuzz(func(t *testing.T, args, secrets, df string) {
		in := Inputs{BuildType: BuildTypeKmodBuild, Parameters: map[string]string{
			"format": KmodBuildFormat, "module": "m", "target": "t", "dockerfile": df, "dockerfileHash": sha256Of(df),
			"buildArgs": args, "secrets": secrets, "kernelVersion": "6.1.0",
			"osImage": "r.example/os@sha256:" + strings.Repeat("a", 64), "dtkImage": "",
		}}
		k, err := KmodBuildOf(in)
		if err != nil {
			return
		}
		again, err := k.Inputs()
		if err != nil || again.Fingerprint() != in.Fingerprint() {
			t.Fatalf("decoded %q but it does not encode back: %v", args, err)
		}
	})
}
