package payload

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
)

const extRef = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:3333333333333333333333333333333333333333333333333333333333333333"

// TestReleaseFacts reads a release's base OS, extensions and
// driver-toolkit images from its release image in a real (in-process)
// registry, and names the release and the rule for each way it can fail:
// a release or a component image not by digest, a missing tag, an image
// that is not a release image.
func TestReleaseFacts(t *testing.T) {
	bl := startRegistry(t)
	r := registry.Remote{Insecure: []string{bl.host}}
	full := map[string]string{TagRHELCoreOS: osRef, TagRHELCoreOSExtensions: extRef, TagDriverToolkit: dtkRef}
	ref := bl.push(t, "ocp/release:4.20.1", env.ReleaseImage(t, "4.20.1", full))
	byDigest := func(tags map[string]string) string {
		t.Helper()
		return env.PushRelease(t, bl.host+"/ocp/release:x", "4.20.1", tags)
	}
	got, err := ReleaseFacts(context.Background(), "4.20.1", byDigest(full), r)
	if err != nil {
		t.Fatal(err)
	}
	want := Facts{BaseOSImage: osRef, ExtensionsImage: extRef, DriverToolkitImage: dtkRef, ReleaseVersion: "4.20.1", ReleaseImage: got.ReleaseImage}
	if d := cmp.Diff(want, got); d != "" || !strings.HasPrefix(got.ReleaseImage, bl.host+"/ocp/release@sha256:") {
		t.Fatalf("ReleaseFacts (-want +got):\n%s (release image %s)", d, got.ReleaseImage)
	}
	noDTK := map[string]string{TagRHELCoreOS: osRef, TagRHELCoreOSExtensions: extRef}
	byTag := map[string]string{TagRHELCoreOS: "quay.io/openshift-release-dev/ocp-v4.0-art-dev:rhel-coreos", TagRHELCoreOSExtensions: extRef, TagDriverToolkit: dtkRef}
	notRelease := bl.push(t, "ocp/other:1", layered(t, env.TarLayer(t, map[string][]byte{"etc/os-release": []byte("ID=rhcos\n")})))
	for _, tc := range []struct{ name, release, want string }{
		{"release by tag", ref, `reading release 4.20.1: image "` + ref + `" is not a reference by digest`},
		{"no driver-toolkit", byDigest(noDTK), `reading release 4.20.1: release image ` + bl.host + `/ocp/release@sha256:`},
		{"component by tag", byDigest(byTag), `tag "rhel-coreos": "quay.io/openshift-release-dev/ocp-v4.0-art-dev:rhel-coreos" is not a reference by digest`},
		{"not a release image", digestOf(t, notRelease), "no release-manifests/image-references (not a release image?)"},
		{"unreachable", "127.0.0.1:1/ocp/release@sha256:" + strings.Repeat("4", 64), "reading release 4.20.1: reading release image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReleaseFacts(context.Background(), "4.20.1", tc.release, r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if tc.name == "no driver-toolkit" && !strings.Contains(err.Error(), `has no tag "driver-toolkit"`) {
				t.Fatalf("error %v, want it to name the missing driver-toolkit tag", err)
			}
		})
	}
}

// digestOf pins a pushed tag by the digest the registry serves.
func digestOf(t *testing.T, ref string) string {
	t.Helper()
	d, err := Resolve(context.Background(), ref, registry.Remote{})
	if err != nil {
		t.Fatal(err)
	}
	return d
}
