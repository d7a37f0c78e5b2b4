package buildah

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"go.podman.io/image/v5/pkg/sysregistriesv2"

	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestBuildahRegistryFlags checks what buildah is told for pulls (bud) and
// pushes: the Config as registries.conf, --tls-verify=false only for an
// insecure host registries.conf does not cover, and the CAs of exactly
// the hosts a call may reach in --cert-dir.
func TestBuildahRegistryFlags(t *testing.T) {
	const (
		src, mirror, other, push = "source.example:5000", "mirror.example:5000", "other.example", "push.example"
		digest                   = "@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	mirrored := func(blocked, insecureMirror bool) sysregistriesv2.Registry {
		return sysregistriesv2.Registry{
			Prefix: src + "/ocp", Endpoint: sysregistriesv2.Endpoint{Location: src + "/ocp"},
			MirrorByDigestOnly: true, Blocked: blocked,
			Mirrors: []sysregistriesv2.Endpoint{{Location: mirror + "/ocp", Insecure: insecureMirror}},
		}
	}
	cas := map[string][]byte{}
	for _, h := range []string{src, mirror, other, push, "unrelated.example"} {
		ca, _, err := env.SelfSigned("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		cas[h] = ca
	}
	conf := func(rs ...sysregistriesv2.Registry) *registry.Config {
		return &registry.Config{Registries: sysregistriesv2.V2RegistriesConf{Registries: rs}, CAs: cas}
	}
	pulls := []string{src + "/ocp/base" + digest, other + "/ext" + digest, ""}
	cases := []struct {
		name               string
		r                  registry.Remote
		wantPull, wantPush []string // "DIR" stands for the --cert-dir folder
		wantConf           bool     // CONTAINERS_REGISTRIES_CONF is set for bud
		pullCAs, pushCAs   []string // hosts whose CA is in --cert-dir
	}{{
		name:     "no Config: one insecure pulled host turns TLS off for all of bud",
		r:        registry.Remote{AuthFile: "/auth.json", Insecure: []string{src}},
		wantPull: []string{"--authfile", "/auth.json", "--tls-verify=false"},
		wantPush: []string{"--authfile", "/auth.json"},
	}, {
		name: "an insecure host that registries.conf covers needs no global flag",
		r: registry.Remote{Insecure: []string{src}, Config: conf(
			sysregistriesv2.Registry{Prefix: src, Endpoint: sysregistriesv2.Endpoint{Location: src, Insecure: true}})},
		wantPull: []string{"--cert-dir", "DIR"}, wantConf: true, pullCAs: []string{other, src},
		wantPush: []string{"--cert-dir", "DIR"}, pushCAs: []string{push},
	}, {
		name:     "an insecure host registries.conf does not cover keeps the global flag",
		r:        registry.Remote{Insecure: []string{other}, Config: conf(mirrored(false, false))},
		wantPull: []string{"--tls-verify=false", "--cert-dir", "DIR"}, wantConf: true, pullCAs: []string{mirror, other, src},
		wantPush: []string{"--cert-dir", "DIR"}, pushCAs: []string{push},
	}, {
		name:     "an insecure mirror in registries.conf: no global flag, its CA still given",
		r:        registry.Remote{Insecure: []string{mirror}, Config: conf(mirrored(false, true))},
		wantPull: []string{"--cert-dir", "DIR"}, wantConf: true, pullCAs: []string{mirror, other, src},
		wantPush: []string{"--cert-dir", "DIR"}, pushCAs: []string{push},
	}, {
		name:     "NeverContactSource: the blocked source's CA is not given",
		r:        registry.Remote{Config: conf(mirrored(true, false))},
		wantPull: []string{"--cert-dir", "DIR"}, wantConf: true, pullCAs: []string{mirror, other},
		wantPush: []string{"--cert-dir", "DIR"}, pushCAs: []string{push},
	}, {
		name:     "a push host insecure only in registries.conf is pushed to without TLS checks",
		r:        registry.Remote{Config: conf(sysregistriesv2.Registry{Prefix: push, Endpoint: sysregistriesv2.Endpoint{Location: push, Insecure: true}})},
		wantPull: []string{"--cert-dir", "DIR"}, wantConf: true, pullCAs: []string{other, src},
		wantPush: []string{"--tls-verify=false", "--cert-dir", "DIR"}, pushCAs: []string{push},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			pc, err := pullCall(c.r, pulls, tmp)
			if err != nil {
				t.Fatal(err)
			}
			checkCall(t, "bud", c.r, pc, c.wantPull, c.pullCAs)
			var conf string
			for _, e := range pc.env {
				if v, ok := strings.CutPrefix(e, "CONTAINERS_REGISTRIES_CONF="); ok {
					conf = v
				}
			}
			if (conf != "") != c.wantConf {
				t.Errorf("bud environment %q: CONTAINERS_REGISTRIES_CONF set %v, want %v", pc.env, conf != "", c.wantConf)
			}
			if conf != "" {
				// buildah must read the same mirrors as the Go reads.
				back, err := registry.LoadDir(filepath.Dir(conf))
				if err != nil {
					t.Fatal(err)
				}
				if len(back.Registries.Registries) != len(c.r.Config.Registries.Registries) {
					t.Errorf("registries.conf for buildah holds %d registries, the Config %d", len(back.Registries.Registries), len(c.r.Config.Registries.Registries))
				}
			}
			push, err := pushCall(c.r, push, tmp)
			if err != nil {
				t.Fatal(err)
			}
			if len(push.env) != 0 {
				t.Errorf("push environment %q: a push reads no registries.conf of kiln's", push.env)
			}
			checkCall(t, "push", c.r, push, c.wantPush, c.pushCAs)
		})
	}
}

// checkCall compares a call's flags (its --cert-dir folder as "DIR") and
// the CAs in that folder.
func checkCall(t *testing.T, what string, r registry.Remote, c buildahCall, want, cas []string) {
	t.Helper()
	got := slices.Clone(c.args)
	dir := ""
	if i := slices.Index(got, "--cert-dir"); i >= 0 && i+1 < len(got) {
		dir, got[i+1] = got[i+1], "DIR"
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s flags %q, want %q", what, got, want)
	}
	var hosts []string
	if dir != "" {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			h := strings.TrimSuffix(e.Name(), ".crt")
			hosts = append(hosts, h)
			if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); string(b) != string(r.Config.CA(h)) {
				t.Errorf("%s --cert-dir %s does not hold %s's CA", what, e.Name(), h)
			}
		}
	}
	slices.Sort(hosts)
	if !slices.Equal(hosts, cas) {
		t.Errorf("%s --cert-dir holds the CAs of %q, want %q", what, hosts, cas)
	}
}

// TestBudPullsFromTheMirrorWithItsCA builds FROM a source registry that
// does not exist, by digest, with a Config that mirrors it to a registry
// serving TLS with its own self-signed CA: bud pulls from the mirror,
// trusting that CA for that host, and the push goes to the named registry.
// Without the Config the same build fails: the mirror made the difference.
func TestBudPullsFromTheMirrorWithItsCA(t *testing.T) {
	e := env.Start(t, env.Options{Registry: true, Buildah: true})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mirror := env.StartRegistry(t, env.RegistryOptions{TLS: true})
	plain := imagetest.PushBusyboxBase(ctx, t, e, "base/busybox:1")

	// The mirror holds the base under another repository, same digest.
	img, err := remote.Image(imagetest.MustRef(t, plain))
	if err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	mref, err := name.ParseReference(mirror.Host + "/mirror/busybox:1")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(mref, img, remote.WithTransport(mirror.Transport())); err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(mirror.CAFile())
	if err != nil {
		t.Fatal(err)
	}
	// Nothing listens on port 1: a pull from the source fails at once.
	const source = "127.0.0.1:1/ocp/busybox"
	cfg := &registry.Config{
		Registries: sysregistriesv2.V2RegistriesConf{Registries: []sysregistriesv2.Registry{{
			Prefix: source, Endpoint: sysregistriesv2.Endpoint{Location: source}, MirrorByDigestOnly: true,
			Mirrors: []sysregistriesv2.Endpoint{{Location: mirror.Host + "/mirror/busybox"}},
		}}},
		CAs: map[string][]byte{mirror.Host: ca},
	}
	base := source + "@" + d.String()
	dir := t.TempDir()
	cf := filepath.Join(dir, "Containerfile")
	if err := os.WriteFile(cf, []byte("FROM "+base+"\nRUN echo mirrored > /mirrored\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bud := Bud{Dir: dir, Containerfile: cf, Target: e.Registry.Ref("kiln/mirrored:1"), Pulls: []string{base}}
	bb := Buildah{Env: e.Buildah.Env}

	if _, err := bb.BudAndPush(ctx, registry.Remote{Insecure: []string{e.Registry.Host}}, bud); err == nil {
		t.Fatal("bud without the Config pulled from a source that does not exist")
	}
	r := registry.Remote{Insecure: []string{e.Registry.Host}, Config: cfg}
	got, err := bb.BudAndPush(ctx, r, bud)
	if err != nil {
		t.Fatal(err)
	}
	out, err := remote.Image(imagetest.MustRef(t, e.Registry.Host+"/kiln/mirrored@"+got.String()))
	if err != nil {
		t.Fatal(err)
	}
	baseLayers, _ := img.Layers()
	outLayers, _ := out.Layers()
	if len(outLayers) != len(baseLayers)+1 {
		t.Fatalf("pushed image has %d layers, want the base's %d and one more", len(outLayers), len(baseLayers))
	}
	for i, l := range baseLayers {
		want, _ := l.DiffID()
		if gotID, _ := outLayers[i].DiffID(); gotID != want {
			t.Errorf("layer %d is %s, the mirrored base has %s", i, gotID, want)
		}
	}
	if entries := imagetest.LayerEntries(t, outLayers[len(outLayers)-1]); entries["mirrored"].Data != "mirrored\n" {
		t.Errorf("the RUN step's layer lacks /mirrored: %v", entries)
	}
}
