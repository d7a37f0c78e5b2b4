package modsign_test

import (
	"archive/tar"
	"bytes"
	"crypto"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/kiln-dev/kiln/pkg/modsign"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/kmodtest"
)

func TestSignImage(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	kp := kmodtest.NewKeyPair(t, "kiln kmod signer")
	s, err := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	for _, withLabel := range []bool{true, false} {
		src := kmodtest.UnsignedImage(t, withLabel)
		wantLayer := types.DockerLayer
		if !withLabel {
			// An OCI manifest gets an OCI layer: buildah refuses a Docker
			// layer in an OCI manifest when it pulls the kmod image.
			src = mutate.ConfigMediaType(mutate.MediaType(src, types.OCIManifestSchema1), types.OCIConfigJSON)
			wantLayer = types.OCILayer
		}
		srcRef, _ := name.ParseReference(r.Ref("kmods/rhcos:414-unsigned"), name.Insecure)
		dstRef, _ := name.ParseReference(r.Ref("kmods/rhcos:414"), name.Insecure)
		if err := remote.Write(srcRef, src); err != nil {
			t.Fatal(err)
		}
		res, err := modsign.SignImage(t.Context(), modsign.SignImageInput{
			Source: srcRef, Target: dstRef, Signer: s,
			FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"},
		})
		if err != nil {
			t.Fatalf("label %v: %v", withLabel, err)
		}
		if res.KernelFullVersion != kmodtest.Kernel || len(res.Signed) != 2 {
			t.Fatalf("kernel %q signed %v", res.KernelFullVersion, res.Signed)
		}
		out, err := remote.Image(dstRef)
		if err != nil {
			t.Fatal(err)
		}
		srcLayers, _ := src.Layers()
		outLayers, _ := out.Layers()
		if len(outLayers) != len(srcLayers)+1 {
			t.Fatalf("signed image has %d layers, want the %d unsigned ones plus one", len(outLayers), len(srcLayers))
		}
		// The OS layer has nothing under /opt: it stays shared.
		if a, b := kmodtest.DigestOf(t, srcLayers[0]), kmodtest.DigestOf(t, outLayers[0]); a != b {
			t.Errorf("OS layer changed: %s → %s", a, b)
		}
		if mt, _ := outLayers[len(outLayers)-1].MediaType(); mt != wantLayer {
			t.Errorf("signed layer media type %s, want %s (the manifest's family)", mt, wantLayer)
		}
		extra := "usr/lib/modules/" + kmodtest.Kernel + "/extra/"
		files := topLayer(t, outLayers[len(outLayers)-1])
		p := filepath.Join(t.TempDir(), "a.ko")
		_ = os.WriteFile(p, files[extra+"kmm_ci_a.ko"].data, 0o644)
		if got := kmodtest.ModinfoSig(t, p); got["signer"] != "kiln kmod signer" || got["sig_hashalgo"] != "sha256" {
			t.Errorf("modinfo of the signed module from the image: %v", got)
		}
		if m := files[extra+"kmm_ci_b.ko"].mode; m != 0o600 {
			t.Errorf("mode of kmm_ci_b.ko: %o, want 600 kept", m)
		}
		wantPlacement := &modsign.Placement{Kernel: kmodtest.Kernel, Modules: []modsign.Move{
			{From: "/opt/lib/modules/" + kmodtest.Kernel + "/kmm_ci_a.ko", To: "/" + extra + "kmm_ci_a.ko", Signed: true},
			{From: "/opt/lib/modules/" + kmodtest.Kernel + "/kmm_ci_b.ko", To: "/" + extra + "kmm_ci_b.ko", Signed: true},
		}}
		if diff := cmp.Diff(wantPlacement, res.Placement, cmpopts.IgnoreFields(modsign.Placement{}, "Depmod")); diff != "" {
			t.Errorf("placement (-want +got):\n%s", diff)
		}
		root := kmodtest.ExtractRoot(t, out)
		kmodtest.WantBooted(t, root, kmodtest.Kernel, map[string]string{"kmm_ci_a": "kiln kmod signer", "kmm_ci_b": "kiln kmod signer"})
		if placed, err := modsign.PlacedModules(out, kmodtest.Kernel); err != nil || len(placed) != 2 {
			t.Errorf("PlacedModules = %v, %v; want both modules", placed, err)
		}
	}
}

// TestSignImageRefusesNothingToSignAndPushesNothing: an empty filesToSign,
// or a pattern matching no file, fails naming the field and the pattern,
// and the signed image is never pushed (a "signed" image with nothing
// signed would reach the node).
func TestSignImageRefusesNothingToSignAndPushesNothing(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	kp := kmodtest.NewKeyPair(t, "kiln kmod signer")
	s, _ := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	srcRef, _ := name.ParseReference(r.Ref("kmods/rhcos:unsigned"), name.Insecure)
	if err := remote.Write(srcRef, kmodtest.UnsignedImage(t, true)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		files []string
		want  string
	}{
		{"empty list", []string{}, "spec.osMapping.sign.filesToSign: empty"},
		{"no list", nil, "spec.osMapping.sign.filesToSign: empty"},
		{"glob matching nothing", []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_a.ko", "/opt/lib/modules/${KERNEL_FULL_VERSION}/missing-*.ko"},
			`spec.osMapping.sign.filesToSign[1] "/opt/lib/modules/${KERNEL_FULL_VERSION}/missing-*.ko": matches no file in the image (as "/opt/lib/modules/` + kmodtest.Kernel + `/missing-*.ko")`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dstRef, _ := name.ParseReference(r.Ref(fmt.Sprintf("kmods/rhcos:signed-%d", i)), name.Insecure)
			_, err := modsign.SignImage(t.Context(), modsign.SignImageInput{Source: srcRef, Target: dstRef, Signer: s, FilesToSign: tc.files})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
			if _, err := remote.Head(dstRef); err == nil || !strings.Contains(err.Error(), "MANIFEST_UNKNOWN") && !strings.Contains(err.Error(), "404") {
				t.Errorf("target was pushed despite the failure: %v", err)
			}
		})
	}
}

type tarFile struct {
	data []byte
	mode int64
}

func topLayer(t *testing.T, l v1.Layer) map[string]tarFile {
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]tarFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		out[h.Name] = tarFile{data: b, mode: h.Mode}
	}
}

func keys(m map[string]tarFile) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestSignImageRefusesWhatANodeWouldLoseAndPushesNothing: content under
// /opt that is no module or firmware, modules built for another kernel
// than the image's, and a missing depmod each fail kmod-sign with the file
// (or tool) and the rule named, and nothing is pushed.
func TestSignImageRefusesWhatANodeWouldLoseAndPushesNothing(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	kp := kmodtest.NewKeyPair(t, "kiln kmod signer")
	s, _ := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	base := kmodtest.UnsignedImage(t, true)
	cases := []struct {
		name   string
		img    v1.Image
		depmod string
		want   string
	}{
		{"a tool under /opt", withLayer(t, base, map[string][]byte{"opt/acme/bin/tool": []byte("#!/bin/sh\n")}), "",
			"placing modules: /opt/acme/bin/tool: a node drops /opt"},
		{"modules of another kernel", withLayer(t, base, map[string][]byte{"opt/lib/modules/6.1.0-56-amd64/x.ko": []byte("\x7fELF")}), "",
			`placing modules: /opt/lib/modules/6.1.0-56-amd64/x.ko is for kernel "6.1.0-56-amd64", but the image is built for kernel ` + kmodtest.Kernel},
		{"no depmod", base, filepath.Join(t.TempDir(), "depmod"), "running depmod for kernel " + kmodtest.Kernel + ": exec: "},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srcRef, _ := name.ParseReference(r.Ref(fmt.Sprintf("kmods/rhcos:unsigned-%d", i)), name.Insecure)
			if err := remote.Write(srcRef, tc.img); err != nil {
				t.Fatal(err)
			}
			dstRef, _ := name.ParseReference(r.Ref(fmt.Sprintf("kmods/rhcos:lost-%d", i)), name.Insecure)
			_, err := modsign.SignImage(t.Context(), modsign.SignImageInput{Source: srcRef, Target: dstRef, Signer: s, Depmod: tc.depmod,
				FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/kmm_ci_a.ko"}})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant %s", err, tc.want)
			}
			if _, err := remote.Head(dstRef); err == nil {
				t.Errorf("target was pushed despite the failure")
			}
		})
	}
}

// TestSignImageMovesFirmwareToUsr: firmware the build wrote under
// /opt/lib/firmware/ or the day-0 proposal's /var/lib/firmware/ (which a
// node applies on first install only) is in /usr/lib/firmware/ of the
// signed image, byte for byte, and no longer where it was.
func TestSignImageMovesFirmwareToUsr(t *testing.T) {
	r := env.StartRegistry(t, env.RegistryOptions{})
	kp := kmodtest.NewKeyPair(t, "kiln kmod signer")
	s, _ := modsign.NewSigner(kp.Cert, kp.Key, crypto.SHA256)
	fw := map[string][]byte{"opt/lib/firmware/acme/fw.bin": []byte("\x00acme firmware 1"), "var/lib/firmware/acme/other.bin": []byte("\x00acme firmware 2")}
	srcRef, _ := name.ParseReference(r.Ref("kmods/rhcos:fw-unsigned"), name.Insecure)
	if err := remote.Write(srcRef, withLayer(t, kmodtest.UnsignedImage(t, true), fw)); err != nil {
		t.Fatal(err)
	}
	dstRef, _ := name.ParseReference(r.Ref("kmods/rhcos:fw"), name.Insecure)
	res, err := modsign.SignImage(t.Context(), modsign.SignImageInput{Source: srcRef, Target: dstRef, Signer: s,
		FilesToSign: []string{"/opt/lib/modules/${KERNEL_FULL_VERSION}/*.ko"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []modsign.Move{{From: "/opt/lib/firmware/acme/fw.bin", To: "/usr/lib/firmware/acme/fw.bin"},
		{From: "/var/lib/firmware/acme/other.bin", To: "/usr/lib/firmware/acme/other.bin"}}
	if diff := cmp.Diff(want, res.Placement.Firmware); diff != "" {
		t.Errorf("firmware placement (-want +got):\n%s", diff)
	}
	out, err := remote.Image(dstRef)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := kmodtest.FlattenImage(t, out)
	for from, data := range fw {
		to := "usr/lib/firmware/acme/" + filepath.Base(from)
		if !bytes.Equal(files[to], data) {
			t.Errorf("/%s = %q, want the bytes of /%s", to, files[to], from)
		}
		if _, ok := files[from]; ok {
			t.Errorf("/%s is still in the signed image", from)
		}
	}
}
