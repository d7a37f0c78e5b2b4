package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// A renamed flag's old name still sets the new flag for one release,
// prints cobra's deprecation warning naming the new flag on stderr (not
// stdout), and is hidden from help. Each case stops at validation, after
// parsing, so nothing runs.
func TestDeprecatedFlagNamesStillWork(t *testing.T) {
	cases := []struct {
		root      string
		args      []string
		flag      string // the flag that must hold the value
		warning   string
		helpLacks string
	}{
		{StepsName, []string{"reproduce", "--secrets-dir", "/s"}, "build-secrets-dir",
			"Flag --secrets-dir has been deprecated, use --build-secrets-dir instead", "--secrets-dir "},
		{StepsName, []string{"bootimages", "--output", "/o"}, "output-dir",
			"Flag --output has been deprecated, use --output-dir instead", "--output "},
		{TriggerName, []string{"--once", "--output", "/o"}, "output-dir",
			"Flag --output has been deprecated, use --output-dir instead", "--output "},
		{TriggerName, []string{"--once", "--local-keys", "/k"}, "keys-dir",
			"Flag --local-keys has been deprecated, use --keys-dir instead", "--local-keys"},
		{TriggerName, []string{"--once", "--key-dir", "/k"}, "key-dir",
			"Flag --key-dir has been deprecated, put cosign.key, cosign.pub and cosign.password in the cosign/ folder of --keys-dir instead", "--key-dir"},
	}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{c.root}, c.args...), " "), func(t *testing.T) {
			root := roots()[c.root]()
			r := execute(root, c.args...)
			if r.code != exitcode.ExitUsage || r.out != "" {
				t.Fatalf("exit %d, stdout %q: want the validation error (2) and nothing on stdout", r.code, r.out)
			}
			if !strings.Contains(r.err, c.warning) {
				t.Errorf("stderr %q lacks the warning %q", r.err, c.warning)
			}
			cmd, _, err := root.Find(c.args)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.args[len(c.args)-1], cmd.Flags().Lookup(c.flag).Value.String()); diff != "" {
				t.Errorf("--%s (-want +got):\n%s", c.flag, diff)
			}
			help := execute(roots()[c.root](), append(c.args[:len(c.args)-2:len(c.args)-2], "--help")...)
			if strings.Contains(help.out, c.helpLacks) {
				t.Errorf("help lists the deprecated %s:\n%s", c.helpLacks, help.out)
			}
		})
	}
}

// A format given to a flag that used to name a folder is refused: the
// old "--output json" made a folder called json in the current
// directory (./json/kiln.lock for the trigger).
func TestFormatGivenToOldFolderFlagIsRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, c := range []struct {
		root string
		args []string
	}{
		{TriggerName, []string{"--source", "dir:" + t.TempDir(), "--once", "--output", "json"}},
		{TriggerName, []string{"--source", "dir:" + t.TempDir(), "--once", "--output", "text"}},
		{StepsName, []string{"bootimages", "--source", "dir:" + t.TempDir(), "--work", t.TempDir(), "--results-dir", t.TempDir(), "--output", "json"}},
	} {
		r := execute(roots()[c.root](), c.args...)
		if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "names a folder (it is now --output-dir)") {
			t.Errorf("%s %v: exit %d %q, want 2 saying --output is now --output-dir", c.root, c.args, r.code, r.err)
		}
	}
	entries, err := os.ReadDir(".")
	if err != nil || len(entries) != 0 {
		t.Errorf("the current folder holds %v (%v), want nothing", entries, err)
	}
}

// reproduce's --output FILE (its meaning before -o text|json) still
// names the JSON report file, with a warning naming --report-file;
// together with --report-file it is a usage error.
func TestReproduceOldOutputIsTheReportFile(t *testing.T) {
	ref := "registry.example.com/os@sha256:" + strings.Repeat("a", 64)
	file := filepath.Join(t.TempDir(), "diff.json")
	root := newSteps(noEnv)
	// No identity to verify with: a usage error from Run, past
	// validation, before any registry is asked.
	r := execute(root, "reproduce", ref, "--public-key", t.TempDir()+"/none.pub", "--output", file)
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "no signing identity") {
		t.Fatalf("exit %d %q, want 2 for no identity (past validation)", r.code, r.err)
	}
	if !strings.Contains(r.err, "--output FILE is deprecated, use --report-file "+file) {
		t.Errorf("stderr %q lacks the deprecation warning", r.err)
	}
	cmd, _, _ := root.Find([]string{"reproduce"})
	if got := cmd.Flags().Lookup("report-file").Value.String(); got != file {
		t.Errorf("--report-file = %q, want %q", got, file)
	}

	r = execute(newSteps(noEnv), "reproduce", ref, "--output", "a.json", "--report-file", "b.json")
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, `--output "a.json": not a format`) {
		t.Errorf("--output FILE with --report-file: exit %d %q, want 2", r.code, r.err)
	}
	r = execute(newSteps(noEnv), "reproduce", ref, "--public-key", t.TempDir()+"/none.pub", "-o", "json")
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "no signing identity") || strings.Contains(r.err, "deprecated") {
		t.Errorf("-o json: exit %d %q, want 2 for no identity (past validation) and no warning", r.code, r.err)
	}
}

// -o takes text or json only, on every command that has it.
func TestBadFormatIsUsageError(t *testing.T) {
	for _, c := range []struct {
		args  []string
		value string
	}{
		{[]string{"version", "-o", "yaml"}, "yaml"},
		{[]string{"verify", "--output", "yaml"}, "yaml"},
		{[]string{"report", "-o", "yaml"}, "yaml"},
		{[]string{"reproduce", "--output="}, ""},
	} {
		r := execute(newSteps(noEnv), c.args...)
		if r.code != exitcode.ExitUsage || !strings.Contains(r.err, `--output "`+c.value+`": want text or json`) {
			t.Errorf("%v: exit %d %q, want 2 naming --output", c.args, r.code, r.err)
		}
	}
}

// version -o json prints the same fields as the text, as one object.
func TestVersionJSON(t *testing.T) {
	r := execute(newSteps(noEnv), "version", "-o", "json")
	if r.code != 0 || r.err != "" {
		t.Fatalf("exit %d %q", r.code, r.err)
	}
	var v base.BuildVersion
	if err := json.Unmarshal([]byte(r.out), &v); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.out)
	}
	if diff := cmp.Diff(base.ReadBuildVersion(), v); diff != "" {
		t.Errorf("version -o json (-want +got):\n%s", diff)
	}
	text := execute(newSteps(noEnv), "version").out
	for _, f := range []string{v.Version, v.Revision, v.Time, v.Results, v.Go, v.Platform} {
		if !strings.Contains(text, f) {
			t.Errorf("text version lacks %q:\n%s", f, text)
		}
	}
}

// report -o json: stdout holds the summary as JSON alone, escaped as the
// text is (a hostile --trigger reaches it as text to read, not as
// terminal controls: JSON escapes C0 controls but not C1 or bidi ones),
// and the text summary goes to stderr.
func TestReportJSON(t *testing.T) {
	work, results := t.TempDir(), t.TempDir()
	r := execute(newSteps(noEnv), "report", "-o", "json", "--pool", "worker", "--work", work, "--results-dir", results,
		"--aggregate", "Failed", "--trigger", "manual\u009b2J\u202eevil", "render=Succeeded", "image-build=Failed")
	if r.code != 0 {
		t.Fatalf("exit %d %q", r.code, r.err)
	}
	var got struct {
		Pool, Outcome, FailedStage string
		Stages                     []struct{ Stage, Status string }
	}
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("stdout is not JSON alone: %v\n%s", err, r.out)
	}
	if diff := cmp.Diff("worker/Failed/image-build", got.Pool+"/"+got.Outcome+"/"+got.FailedStage); diff != "" {
		t.Errorf("pool/outcome/failedStage (-want +got):\n%s", diff)
	}
	status := map[string]string{}
	for _, s := range got.Stages {
		status[s.Stage] = s.Status
	}
	if status["render"] != "Succeeded" || status["image-build"] != "Failed" {
		t.Errorf("stages %+v", got.Stages)
	}
	if !strings.Contains(r.err, "STAGE") {
		t.Errorf("the text summary is not on stderr: %q", r.err)
	}
	if i := rawControls([]byte(r.out)); i >= 0 || strings.ContainsRune(r.out, '\u202e') {
		t.Errorf("stdout holds a raw control or bidi character: %q", r.out)
	}
	b, err := os.ReadFile(filepath.Join(results, "FAILED_STAGE"))
	if err != nil || string(b) != "image-build" {
		t.Errorf("FAILED_STAGE result %q (%v)", b, err)
	}
}

// A step run without --work or --results-dir exits 2 naming both, and
// writes nothing; KILN_WORK and KILN_RESULTS_DIR stand in for them.
func TestStepWithoutFoldersExits2NamingThem(t *testing.T) {
	t.Chdir(t.TempDir())
	r := execute(newSteps(noEnv), "render", "--pool", "worker", "--source", "dir:../../examples/cluster")
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "--work is required") || !strings.Contains(r.err, "--results-dir is required") {
		t.Errorf("exit %d %q, want 2 naming --work and --results-dir", r.code, r.err)
	}
	for _, args := range [][]string{{"bootimages"}, {"report", "--pool", "worker"}, {"kmod-attest", "--pool", "worker"}} {
		r := execute(newSteps(noEnv), args...)
		if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "--work is required") || !strings.Contains(r.err, "--results-dir is required") {
			t.Errorf("%s: exit %d %q, want 2 naming --work and --results-dir", args[0], r.code, r.err)
		}
	}

	work, results := t.TempDir(), t.TempDir()
	env := map[string]string{base.EnvWork: work, base.EnvResultsDir: results}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	r = execute(newSteps(lookup), "report", "--pool", "worker", "render=Succeeded")
	if r.code != 0 {
		t.Fatalf("with $%s and $%s: exit %d %q", base.EnvWork, base.EnvResultsDir, r.code, r.err)
	}
	for _, p := range []string{filepath.Join(work, "report", "summary.txt"), filepath.Join(results, "FAILED_STAGE")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("not written where the environment said: %v", err)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("the current folder holds %v, want nothing", entries)
	}
}

// -v is --verbose (crane's meaning) in both binaries; --version has no
// shorthand.
func TestVerboseShorthandAndVersionLongOnly(t *testing.T) {
	for name, newRoot := range roots() {
		r := execute(newRoot(), "-v", "version")
		if r.code != 0 || !strings.Contains(r.out, "revision:") {
			t.Errorf("%s -v version: exit %d %q", name, r.code, r.err)
		}
		root := newRoot()
		if r := execute(root, "--version"); r.code != 0 || !strings.Contains(r.out, "revision:") {
			t.Errorf("%s --version: exit %d %q", name, r.code, r.err)
		}
		if f := root.Flags().Lookup("version"); f == nil || f.Shorthand != "" {
			t.Errorf("%s: --version %+v, want no shorthand", name, f)
		}
		if f := root.PersistentFlags().Lookup("verbose"); f == nil || f.Shorthand != "v" {
			t.Errorf("%s: --verbose %+v, want -v", name, f)
		}
	}
}

// --verbose (or KILN_VERBOSE=true, as local mode gives its steps) prints
// one line per registry request on stderr; without it there is none.
func TestVerbosePrintsRegistryRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" {
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	// reproduce asks the registry for the attestation first; verify
	// evaluates the policy with containers/image, which --verbose does
	// not cover.
	args := []string{"reproduce", host + "/kiln/os@sha256:" + strings.Repeat("a", 64), "--insecure-registry", host,
		"--public-key", publicKeyFile(t)}
	quiet := execute(newSteps(noEnv), args...)
	loud := execute(newSteps(noEnv), append(args, "--verbose")...)
	verboseEnv := func(k string) (string, bool) { return "true", k == base.EnvVerbose }
	fromEnv := execute(newSteps(verboseEnv), args...)
	if strings.Contains(quiet.err, "registry: GET") {
		t.Errorf("without --verbose: %q", quiet.err)
	}
	for name, r := range map[string]run{"--verbose": loud, "$" + base.EnvVerbose: fromEnv} {
		if !strings.Contains(r.err, "registry: GET "+srv.URL+"/v2/") {
			t.Errorf("with %s, no request line: %q", name, r.err)
		}
	}
}

// publicKeyFile writes a fresh ECDSA public key as PEM, as cosign
// writes cosign.pub.
func publicKeyFile(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cosign.pub")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// --context reaches the kubeconfig loader in both binaries: a context
// the kubeconfig lacks is named in the error.
func TestContextFlagReachesTheKubeconfig(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
current-context: a
clusters: [{name: a, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: a, context: {cluster: a}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		newRoot func() *cobra.Command
		args    []string
	}{
		{func() *cobra.Command { return newSteps(noEnv) }, []string{"render", "--pool", "worker", "--work", t.TempDir(), "--results-dir", t.TempDir()}},
		{func() *cobra.Command { return newTrigger(noEnv) }, nil},
	} {
		r := execute(c.newRoot(), append(c.args, "--kubeconfig", kubeconfig, "--context", "elsewhere")...)
		if r.code != exitcode.ExitFailure || !strings.Contains(r.err, `context "elsewhere"`) {
			t.Errorf("%v: exit %d %q, want 1 naming the context", c.args, r.code, r.err)
		}
	}
}
