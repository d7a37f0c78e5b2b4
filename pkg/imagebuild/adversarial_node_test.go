package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/test/env"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// Attacks by a MachineConfig author on the node: content a node must
// never get, or that its image import refuses. Each is refused before any
// push, with an error naming the file and the rule, and exit code
// "input rejected".

// writeLog is an in-process registry (go-containerregistry's) that
// records every write to the repository kiln builds into.
type writeLog struct {
	mu     sync.Mutex
	writes []string
}

func (l *writeLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead && strings.HasPrefix(r.URL.Path, "/v2/kiln/") {
			l.mu.Lock()
			l.writes = append(l.writes, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// nodeAttackSite is a registry holding a stand-in base: a kernel, an
// /etc/shadow, and what the case adds.
func nodeAttackSite(t *testing.T, extra ...[]tarEntry) (host string, writes *writeLog) {
	t.Helper()
	writes = &writeLog{}
	srv := httptest.NewServer(writes.wrap(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	img := v1.Image(empty.Image)
	layers := append([][]tarEntry{{
		{name: "etc/", typ: tar.TypeDir}, {name: "etc/shadow", body: "root:!locked::0:99999:7:::\n"},
		{name: "usr/lib/modules/" + env.StandInKernel + "/vmlinuz", body: "kernel\n"},
	}}, extra...)
	for _, es := range layers {
		b := tarEntries(t, es)
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := name.ParseReference(host+"/base/os:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return host, writes
}

type tarEntry struct {
	name, body, link string
	typ              byte
}

func tarEntries(t *testing.T, es []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range es {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Linkname: e.link, Mode: 0o644}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func hostileFile(p string, mutate func(*igntypes.File)) igntypes.Config {
	f := igntypes.File{Node: igntypes.Node{Path: p}, FileEmbedded1: igntypes.FileEmbedded1{Contents: igntypes.Resource{Source: imagetest.Ptr("data:,evil")}, Mode: imagetest.Ptr(0o644)}}
	if mutate != nil {
		mutate(&f)
	}
	return igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{f}}}
}

func hardLink(p, target string) igntypes.Config {
	return igntypes.Config{Storage: igntypes.Storage{Links: []igntypes.Link{{
		Node: igntypes.Node{Path: p}, LinkEmbedded1: igntypes.LinkEmbedded1{Target: imagetest.Ptr(target), Hard: imagetest.Ptr(true)},
	}}}}
}

func TestFastPathRefusesHostileMachineConfigBeforePush(t *testing.T) {
	long := strings.Repeat("a", 300)
	cases := []struct {
		name string
		cfg  igntypes.Config
		want []string // the file, the rule, the reason
	}{
		{"file under /proc/sys/kernel", hostileFile("/proc/sys/kernel/core_pattern", nil),
			[]string{"/proc/sys/kernel/core_pattern", "[api-base-directories]", "kernel API file system"}},
		{"file under /sys/kernel", hostileFile("/sys/kernel/mm/transparent_hugepage/enabled", nil),
			[]string{"/sys/kernel/mm/transparent_hugepage/enabled", "[api-base-directories]"}},
		{"file whose path is /", hostileFile("/", nil), []string{"storage.files /", "[path]", "empty tar name"}},
		{"300-byte path component", hostileFile("/etc/"+long, nil), []string{"/etc/" + long, "[name-length]", "NAME_MAX"}},
		{"uid -5", hostileFile("/etc/owned", func(f *igntypes.File) { f.User.ID = imagetest.Ptr(-5) }), []string{"/etc/owned", "[owner]", "user.id -5"}},
		{"gid 2^40", hostileFile("/etc/owned", func(f *igntypes.File) { f.Group.ID = imagetest.Ptr(1 << 40) }), []string{"/etc/owned", "[owner]", "group.id 1099511627776"}},
		{"hard link out of the root", hardLink("/etc/s", "../../../etc/shadow"), []string{"/etc/s", "[hardlink]", "leaves the root"}},
		{"hard link to the base's /etc/shadow", hardLink("/etc/s", "/etc/shadow"), []string{"/etc/s", "[hardlink]", "into the base image"}},
		{"setuid file from an edited rendered.json", hostileFile("/usr/local/bin/suid", func(f *igntypes.File) { f.Mode = imagetest.Ptr(0o4755) }),
			[]string{"/usr/local/bin/suid", "[mode]", "setuid, setgid and sticky bits are not allowed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host, log := nodeAttackSite(t)
			in := BuildInput{Base: host + "/base/os:1", Repository: host + "/kiln/os", Pool: "worker",
				Rendered: imagetest.RenderedMC(t, "rendered-worker-evil", c.cfg)}
			res, err := Build(context.Background(), registry.Remote{Insecure: []string{host}}, in)
			wantRefusedBeforePush(t, res, err, log, append([]string{"rendered-worker-evil"}, c.want...))
		})
	}
}

// TestFastPathRefusesBaseTheNodeCannotImport: the whole image is checked,
// so a base the node's import refuses (a device node, a second kernel, a
// hard link into a lower layer) fails the build before the push, naming
// the file and the rule.
func TestFastPathRefusesBaseTheNodeCannotImport(t *testing.T) {
	cases := []struct {
		name  string
		layer []tarEntry
		want  []string
	}{
		{"device node", []tarEntry{{name: "usr/share/null", typ: tar.TypeChar}}, []string{"/usr/share/null", "[file-type]", "character device"}},
		{"second kernel", []tarEntry{{name: "usr/lib/modules/5.14.0-rt/vmlinuz", body: "rt"}}, []string{"[kernel]", "2 kernels"}},
		{"hard link into a lower layer", []tarEntry{{name: "usr/share/shadow", typ: tar.TypeLink, link: "etc/shadow"}}, []string{"/usr/share/shadow", "[hardlink]"}},
		{"non-UTF-8 name", []tarEntry{{name: "usr/share/caf\xe9", body: "x"}}, []string{"[utf8]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			host, log := nodeAttackSite(t, c.layer)
			in := BuildInput{Base: host + "/base/os:1", Repository: host + "/kiln/os", Pool: "worker",
				Rendered: imagetest.RenderedMC(t, "rendered-worker-ok", imagetest.SampleConfig(t, "hi\n"))}
			res, err := Build(context.Background(), registry.Remote{Insecure: []string{host}}, in)
			wantRefusedBeforePush(t, res, err, log, c.want)
		})
	}
}

func wantRefusedBeforePush(t *testing.T, res *BuildResult, err error, log *writeLog, parts []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("built %s", res.Ref)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error lacks %q: %v", p, err)
		}
	}
	if code := exitcode.CodeOf(err); code != exitcode.ExitInputRejected {
		t.Errorf("exit code %d, want %d (input rejected): %v", code, exitcode.ExitInputRejected, err)
	}
	if len(log.writes) > 0 {
		t.Errorf("the registry was written before the refusal: %v", log.writes)
	}
}

// TestFastPathWarnsAboutContentOnlyMCOWrites: MachineConfig files a node
// gets from the image on first install only (/var, and /usr/local, /opt
// … which are symlinks into /var on CoreOS), or never (/run, /boot), are
// named as warnings with why; the image still builds.
func TestFastPathWarnsAboutContentOnlyMCOWrites(t *testing.T) {
	host, _ := nodeAttackSite(t)
	cfg := igntypes.Config{Storage: igntypes.Storage{Files: []igntypes.File{
		imagetest.File(t, "/etc/ok.conf", "ok\n", 0o644, false),
		imagetest.File(t, "/var/lib/kiln/state", "v\n", 0o644, false),
		imagetest.File(t, "/opt/tool", "t\n", 0o755, false),
		imagetest.File(t, "/run/kiln/flag", "r\n", 0o644, false),
		imagetest.File(t, "/boot/loader.conf", "b\n", 0o644, false),
	}}}
	in := BuildInput{Base: host + "/base/os:1", Repository: host + "/kiln/os", Pool: "worker", Rendered: imagetest.RenderedMC(t, "rendered-worker-var", cfg)}
	res, err := Build(context.Background(), registry.Remote{Insecure: []string{host}}, in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range res.Lint.Findings {
		if f.Rule == RuleMCOVar || f.Rule == RuleMCODropped {
			got[f.Path] = f.Rule
		}
	}
	want := map[string]string{
		"/var/lib/kiln/state": RuleMCOVar, "/var/opt/tool": RuleMCOVar,
		"/run/kiln/flag": RuleMCODropped, "/boot/loader.conf": RuleMCODropped,
	}
	for p, rule := range want {
		if got[p] != rule {
			t.Errorf("%s: rule %q, want %q (findings %v)", p, got[p], rule, res.Lint.Findings)
		}
	}
	if !res.Lint.Pass || res.Lint.Rules != nodeimport.RulesVersion {
		t.Errorf("lint %+v, want a pass under %s", res.Lint.Summary, nodeimport.RulesVersion)
	}
	for _, e := range res.Plan.Entries {
		if strings.HasPrefix(e.Path, "/run") || strings.HasPrefix(e.Path, "/boot") {
			t.Errorf("the layer holds %s, in a folder the node's import drops", e.Path)
		}
	}
	if !strings.Contains(res.Lint.Findings[0].Message+res.Lint.Findings[1].Message, "MCO's daemon writes the file") {
		t.Errorf("warnings do not say MCO's daemon writes the file: %v", res.Lint.Findings)
	}
}

// TestNodeCheckRefusesHostileEntriesInTheLayer: were the planner's rules
// bypassed, the check of the whole image applies the same rules to the
// layer Plan.Tar writes, naming the same rule for each.
func TestNodeCheckRefusesHostileEntriesInTheLayer(t *testing.T) {
	base := tarEntries(t, []tarEntry{{name: "etc/shadow", body: "x"}, {name: "usr/lib/modules/k/vmlinuz", body: "k"}})
	cases := []struct {
		name  string
		entry Entry
		rule  string
	}{
		{"file under /proc/sys/kernel", Entry{Path: "/proc/sys/kernel/core_pattern", Type: tar.TypeReg, Mode: 0o644, Data: []byte("|/x")}, nodeimport.RuleAPIDirs},
		{"file under /sys/kernel", Entry{Path: "/sys/kernel/x", Type: tar.TypeReg, Mode: 0o644}, nodeimport.RuleAPIDirs},
		{"empty name", Entry{Path: "/", Type: tar.TypeReg, Mode: 0o644}, nodeimport.RulePath},
		{"300-byte component", Entry{Path: "/etc/" + strings.Repeat("a", 300), Type: tar.TypeReg, Mode: 0o644}, nodeimport.RuleNameLength},
		{"uid -5", Entry{Path: "/etc/u", Type: tar.TypeReg, Mode: 0o644, UID: -5}, nodeimport.RuleOwner},
		{"gid 2^40", Entry{Path: "/etc/g", Type: tar.TypeReg, Mode: 0o644, GID: 1 << 40}, nodeimport.RuleOwner},
		{"hard link out of the root", Entry{Path: "/etc/s", Type: tar.TypeLink, Link: "../../../etc/shadow"}, nodeimport.RuleHardlink},
		{"hard link to the base's /etc/shadow", Entry{Path: "/etc/s", Type: tar.TypeLink, Link: "etc/shadow"}, nodeimport.RuleHardlink},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			layer, err := (&Plan{Entries: []Entry{c.entry}}).Tar()
			if err != nil {
				t.Fatalf("writing the layer: %v", err)
			}
			_, fs, err := nodeimport.ImportTars([]func() (io.ReadCloser, error){opener(base), opener(layer)}, nodeimport.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, f := range nodeimport.Errors(fs) {
				rules = append(rules, f.Rule)
			}
			if len(rules) != 1 || rules[0] != c.rule {
				t.Errorf("error rules %v, want [%s] (findings %v)", rules, c.rule, fs)
			}
		})
	}
}

func opener(b []byte) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
}

// TestReuseRequiresAnAttestedNodeCheck: an image at the fingerprint tag
// whose attestation (from kiln's key, otherwise binding these inputs)
// names no node import check is not reused but rebuilt, checked and
// pushed; a build attested with the check is reused.
func TestReuseRequiresAnAttestedNodeCheck(t *testing.T) {
	host, _ := nodeAttackSite(t)
	r := registry.Remote{Insecure: []string{host}}
	key := imagetest.NewCosignKey(t)
	in := BuildInput{Base: host + "/base/os:1", Repository: host + "/kiln/os", Pool: "worker",
		Rendered: imagetest.RenderedMC(t, "rendered-worker-1", imagetest.SampleConfig(t, "hi\n")), Identity: key.ID}
	first, err := Build(context.Background(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	unchecked := *first
	unchecked.Inputs.Parameters = maps.Clone(first.Inputs.Parameters)
	delete(unchecked.Inputs.Parameters, "nodeLint")
	key.Sign(t, r, unchecked.Ref, unchecked.Inputs)

	second, err := Build(context.Background(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	if second.Reused || !strings.Contains(second.Rejected, "parameter nodeLint is missing") {
		t.Fatalf("reused %v, rejected %q; want a rebuild naming the missing node check", second.Reused, second.Rejected)
	}
	if second.Lint == nil || !second.Lint.Pass || second.Lint.Attested {
		t.Errorf("the rebuild's node check %+v, want one run by this build", second.Lint)
	}

	key.Sign(t, r, second.Ref, second.Inputs)
	third, err := Build(context.Background(), r, in)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Reused || third.Lint == nil || !third.Lint.Attested || third.Lint.Rules != nodeimport.RulesVersion {
		t.Errorf("reused %v, lint %+v; want the attested build reused with its attested rules", third.Reused, third.Lint)
	}
}
