package cli

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kiln-dev/kiln/cmd/cli/base"
	"github.com/kiln-dev/kiln/pkg/exitcode"
	"github.com/kiln-dev/kiln/pkg/registry"
	"github.com/kiln-dev/kiln/pkg/step"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/golden"
)

type run struct {
	code     int
	out, err string
}

func execute(root *cobra.Command, args ...string) run {
	var out, errb bytes.Buffer
	code := Execute(context.Background(), root, args, &out, &errb)
	return run{code, out.String(), errb.String()}
}

func roots() map[string]func() *cobra.Command {
	return map[string]func() *cobra.Command{
		StepsName:   func() *cobra.Command { return newSteps(noEnv) },
		TriggerName: func() *cobra.Command { return newTrigger(noEnv) },
	}
}

// Every command's --help goes to stdout with its example and the exit
// codes, and nothing to stderr.
func TestEveryHelpOnStdoutWithExampleAndExitCodes(t *testing.T) {
	for name, newRoot := range roots() {
		base.Walk(newRoot(), func(c *cobra.Command) {
			if c.Name() == "help" || (c.Parent() != nil && c.Parent().Name() == "completion") {
				return
			}
			path := strings.Fields(c.CommandPath())[1:]
			t.Run(c.CommandPath(), func(t *testing.T) {
				r := execute(roots()[name](), append(path, "--help")...)
				if r.code != exitcode.ExitOK || r.err != "" {
					t.Fatalf("exit %d, stderr %q", r.code, r.err)
				}
				if c.Name() != "completion" && (c.Example == "" || !strings.Contains(r.out, strings.TrimSpace(c.Example))) {
					t.Errorf("help lacks an example:\n%s", r.out)
				}
				if c.Short == "" || c.Long == "" {
					t.Errorf("Short %q, Long %q: want both", c.Short, c.Long)
				}
				for _, ec := range exitcode.ExitCodes {
					if !strings.Contains(r.out, ec.Meaning) {
						t.Errorf("help lacks exit code %d (%s)", ec.Code, ec.Name)
					}
				}
			})
		})
	}
}

// `help render` prints render's help, the same as `render --help`.
func TestHelpSubcommand(t *testing.T) {
	help := execute(newSteps(noEnv), "help", "render")
	flagHelp := execute(newSteps(noEnv), "render", "--help")
	if help.code != 0 || help.out != flagHelp.out || !strings.Contains(help.out, "kiln-steps render [flags]") {
		t.Errorf("help render: exit %d\n%s\nwant render --help:\n%s", help.code, help.out, flagHelp.out)
	}
}

// A bad flag or argument exits 2 in both binaries with one error line
// prefixed with the command and a hint, and nothing on stdout.
func TestUsageErrorsExit2(t *testing.T) {
	cases := []struct {
		root       string
		args       []string
		prefix     string
		wantInLine string
	}{
		{StepsName, []string{"render", "--nope"}, "kiln-steps render: ", "unknown flag: --nope"},
		{StepsName, []string{"--nope"}, "kiln-steps: ", "unknown flag: --nope"},
		{StepsName, []string{"nope"}, "kiln-steps: ", `unknown command "nope"`},
		{StepsName, []string{"render", "extra"}, "kiln-steps render: ", `unknown command "extra"`},
		{StepsName, []string{"render", "--fetch-attempts=x"}, "kiln-steps render: ", "--fetch-attempts"},
		{TriggerName, []string{"--nope"}, "kiln-trigger: ", "unknown flag: --nope"},
		{TriggerName, []string{"extra"}, "kiln-trigger: ", "extra"},
		{TriggerName, []string{"--source", "git:x"}, "kiln-trigger: ", `--source "git:x"`},
		{TriggerName, []string{"--once"}, "kiln-trigger: ", "--once needs --source dir:PATH"},
	}
	for _, c := range cases {
		t.Run(strings.Join(append([]string{c.root}, c.args...), " "), func(t *testing.T) {
			r := execute(roots()[c.root](), c.args...)
			lines := strings.Split(strings.TrimSuffix(r.err, "\n"), "\n")
			if r.code != exitcode.ExitUsage || r.out != "" {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 2 and nothing on stdout", r.code, r.out, r.err)
			}
			if len(lines) != 2 || !strings.HasPrefix(lines[0], c.prefix) || !strings.Contains(lines[0], c.wantInLine) || !strings.Contains(lines[1], "--help") {
				t.Errorf("stderr %q: want one error line %q…%q and a hint", r.err, c.prefix, c.wantInLine)
			}
		})
	}
}

// Every missing required flag is named in one error.
func TestMissingRequiredFlagsAllNamed(t *testing.T) {
	r := execute(newSteps(noEnv), "image-build", "--work", t.TempDir())
	if r.code != exitcode.ExitUsage {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	first := strings.SplitN(r.err, "\n", 2)[0]
	for _, f := range []string{"--pool", "--base", "--repository"} {
		if !strings.Contains(first, f) {
			t.Errorf("error line %q does not name %s", first, f)
		}
	}
}

// Environment defaults are shown in help and used; an explicit empty
// flag (an unbound optional workspace) overrides the environment.
func TestEnvDefaults(t *testing.T) {
	env := map[string]string{base.EnvPool: "a/b", base.EnvWork: "/env/work", base.EnvRegistriesConfig: "/env/registries",
		base.EnvRegistryAuthFile: "/env/auth.json", base.EnvInsecureRegistry: "r1:5000,r2", base.EnvRunID: "run-7"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	help := execute(newSteps(lookup), "image-sign", "--help").out
	for _, k := range []string{base.EnvPool, base.EnvWork, base.EnvResultsDir, base.EnvRegistriesConfig, base.EnvRegistryAuthFile, base.EnvInsecureRegistry, base.EnvRunID} {
		if !strings.Contains(help, "(env "+k) {
			t.Errorf("image-sign help does not show $%s", k)
		}
	}
	if !strings.Contains(execute(newTrigger(lookup), "--help").out, "(env "+base.EnvInsecureRegistry) {
		t.Error("trigger help does not show $" + base.EnvInsecureRegistry)
	}
	// Used: the pool from the environment is the one validated.
	r := execute(newSteps(lookup), "render", "--source", "dir:"+t.TempDir())
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, `--pool "a/b"`) {
		t.Errorf("render with $KILN_POOL=a/b: exit %d %q", r.code, r.err)
	}

	var o registry.RegistryOptions
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	base.BindRegistry(fs, lookup, &o)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.ConfigDir != "/env/registries" || o.AuthFile != "/env/auth.json" || strings.Join(o.Insecure, ",") != "r1:5000,r2" {
		t.Errorf("from the environment: %+v", o)
	}
	fs = pflag.NewFlagSet("x", pflag.ContinueOnError)
	base.BindRegistry(fs, lookup, &o)
	if err := fs.Parse([]string{"--registries-config="}); err != nil || o.ConfigDir != "" {
		t.Errorf("--registries-config= left %q (%v), want none", o.ConfigDir, err)
	}
}

// version and --version print the same fields in both binaries.
func TestVersion(t *testing.T) {
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}} {
		for name, newRoot := range roots() {
			r := execute(newRoot(), args...)
			if r.code != 0 || r.err != "" {
				t.Fatalf("%s %v: exit %d %q", name, args, r.code, r.err)
			}
			for _, f := range []string{"version:", "revision:", "time:", "results:   " + step.ResultsAPIVersion} {
				if !strings.Contains(r.out, f) {
					t.Errorf("%s %v lacks %q:\n%s", name, args, f, r.out)
				}
			}
			if first == "" {
				first = r.out
			} else if r.out != first {
				t.Errorf("%s %v prints\n%s\nwant the same as the others:\n%s", name, args, r.out, first)
			}
		}
	}
}

// Both binaries offer shell completion.
func TestCompletion(t *testing.T) {
	for name, newRoot := range roots() {
		r := execute(newRoot(), "completion", "bash")
		if r.code != 0 || !strings.Contains(r.out, "bash completion") {
			t.Errorf("%s completion bash: exit %d %q", name, r.code, r.err)
		}
	}
}

// Flags are checked before any network call: a tag is refused by verify
// and rollout without a registry request or a cluster connection.
func TestDigestCheckedBeforeNetwork(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	tag := host + "/kiln/os:latest"
	common := []string{"--pool", "worker", "--work", t.TempDir(), "--results-dir", t.TempDir(), "--insecure-registry", host}
	for _, args := range [][]string{
		append([]string{"verify", "--image", tag}, common...),
		append([]string{"image-sign", "--image", tag}, common...),
		append([]string{"rollout", "--image", tag, "--kubeconfig", filepath.Join(t.TempDir(), "none")}, common...),
	} {
		r := execute(newSteps(noEnv), args...)
		if r.code != exitcode.ExitUsage || !strings.Contains(r.err, `--image "`+tag+`": want repository@sha256:<64 hex>`) || strings.Contains(r.err, "kubeconfig") {
			t.Errorf("%s with a tag: exit %d %q", args[0], r.code, r.err)
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d registry requests for a refused tag", n)
	}
}

// docs/cli/ is what the commands produce: a changed help text, flag or
// command fails here, naming the page and the command that regenerates it;
// -update rewrites the folder.
func TestDocsCLICurrent(t *testing.T) {
	dir := filepath.Join("..", "..", filepath.FromSlash(DocsDir))
	if golden.Update() {
		if err := WriteDocs(dir); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := StaleDocs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range stale {
		t.Errorf("%s/%s differs from what the commands produce (missing, changed or no longer a command); run %s", DocsDir, name, GenCommand)
	}
}

// The index links every command's page and carries the exit-code table;
// each page shows its command's flags.
func TestDocsIndexAndPages(t *testing.T) {
	pages := Docs()
	idx := pages[IndexFile]
	if !strings.Contains(idx, exitcode.ExitCodesMarkdown()) {
		t.Error("the index lacks the exit-code table")
	}
	for _, want := range []string{"kiln-steps.md", "kiln-steps_render.md", "kiln-steps_rollout.md", "kiln-steps_verify.md"} {
		if _, ok := pages[want]; !ok {
			t.Errorf("no page %s", want)
		}
	}
	for name, body := range pages {
		if name == IndexFile {
			continue
		}
		if !strings.Contains(idx, "]("+name+")") {
			t.Errorf("the index does not link %s", name)
		}
		if !strings.Contains(body, "]("+IndexFile+")") {
			t.Errorf("%s does not link back to the index", name)
		}
	}
	if render := pages["kiln-steps_render.md"]; !strings.Contains(render, "--pool") || !strings.Contains(render, "# `kiln-steps render`") {
		t.Errorf("kiln-steps_render.md lacks its title or flags:\n%s", render)
	}
}

// WriteDocs removes pages of commands that no longer exist and rewrites
// edited ones, and leaves files other than pages alone.
func TestWriteDocsRemovesStalePages(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"kiln-steps_gone.md":   "# a removed command\n",
		"kiln-steps_render.md": "edited by hand\n",
		"notes.txt":            "not a page\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stale, err := StaleDocs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"kiln-steps_gone.md", "kiln-steps_render.md", IndexFile} {
		if !slices.Contains(stale, want) {
			t.Errorf("StaleDocs = %q, want it to name %s", stale, want)
		}
	}
	if err := WriteDocs(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "kiln-steps_gone.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the removed command's page is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Errorf("a file other than a page was touched: %v", err)
	}
	if stale, err := StaleDocs(dir); err != nil || len(stale) != 0 {
		t.Errorf("after WriteDocs: stale %q, err %v", stale, err)
	}
}

// An input object that fails strict decoding exits with "input rejected",
// naming the file and the field.
func TestInputRejectedExitCode(t *testing.T) {
	src := t.TempDir()
	pool := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: worker\nspec:\n  bogusField: 1\n"
	if err := os.WriteFile(filepath.Join(src, "pool.yaml"), []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execute(newSteps(noEnv), "render", "--pool", "worker", "--source", "dir:"+src, "--work", t.TempDir(), "--results-dir", t.TempDir())
	if r.code != exitcode.ExitInputRejected || !strings.Contains(r.err, "pool.yaml") || !strings.Contains(r.err, "bogusField") {
		t.Errorf("exit %d, stderr %q; want %d naming pool.yaml and bogusField", r.code, r.err, exitcode.ExitInputRejected)
	}
}

// Malformed flags are reported, all of them, before the cluster or a
// registry is asked: the kubeconfig named here does not exist, so an
// error about it would mean a connection was tried first.
func TestFlagsCheckedBeforeCluster(t *testing.T) {
	none := filepath.Join(t.TempDir(), "no-kubeconfig")
	common := []string{"--work", t.TempDir(), "--results-dir", t.TempDir(), "--kubeconfig", none}
	digest := "registry.example/os@sha256:" + strings.Repeat("a", 64)
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"bootimages", "--vsphere-templates", "only-a-name", "--skew-limit-ocp", "x", "--default-opt-in", "maybe"},
			[]string{"--vsphere-templates", "--skew-limit-ocp", "--default-opt-in"}},
		{[]string{"rollout", "--pool", "worker", "--image", digest, "--canary", "-1", "--max-unavailable", "many", "--timeout", "0s"},
			[]string{"--canary", "--max-unavailable", "--timeout"}},
		{[]string{"kmod-sign", "--pool", "worker", "--hash", "md5", "--keyless"}, []string{"--hash", "--keyless"}},
		{[]string{"render", "--pool", "worker", "--fetch-attempts", "0"}, []string{"--fetch-attempts"}},
	}
	for _, c := range cases {
		r := execute(newSteps(noEnv), append(c.args, common...)...)
		if r.code != exitcode.ExitUsage || strings.Contains(r.err, none) {
			t.Errorf("%s: exit %d %q, want a usage error before the cluster", c.args[0], r.code, r.err)
		}
		for _, w := range c.want {
			if !strings.Contains(r.err, w) {
				t.Errorf("%s: %q does not name %s", c.args[0], r.err, w)
			}
		}
	}
	r := execute(newTrigger(noEnv), "--kubeconfig", none, "--settle", "10s", "--max-settle", "1s")
	if r.code != exitcode.ExitUsage || !strings.Contains(r.err, "--max-settle") {
		t.Errorf("trigger: exit %d %q", r.code, r.err)
	}
}

// A stage that fails records its cause in its stage folder, the same words
// its log ends with; a later successful attempt on the same workspace
// removes it, so the report never shows a stale cause.
func TestFailedStageRecordsItsCauseAndSuccessClearsIt(t *testing.T) {
	src, work := t.TempDir(), t.TempDir()
	pool := "apiVersion: machineconfiguration.openshift.io/v1\nkind: MachineConfigPool\nmetadata:\n  name: worker\nspec:\n  bogusField: 1\n"
	if err := os.WriteFile(filepath.Join(src, "pool.yaml"), []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"render", "--pool", "worker", "--work", work, "--results-dir", t.TempDir()}
	r := execute(newSteps(noEnv), append(args, "--source", "dir:"+src)...)
	ws := workspace.Workspace{Root: work}
	cause := ws.ReadCause(workspace.StageRender)
	if r.code == exitcode.ExitOK || cause == "" || !strings.Contains(r.err, cause) || !strings.Contains(cause, "bogusField") {
		t.Fatalf("exit %d, stderr %q, cause file %q: want the cause recorded, as printed", r.code, r.err, cause)
	}
	r = execute(newSteps(noEnv), append(args, "--source", "dir:../../examples/cluster")...)
	if r.code != exitcode.ExitOK {
		t.Fatalf("render of the sample: exit %d %s", r.code, r.err)
	}
	if _, err := os.Stat(ws.CausePath(workspace.StageRender)); !os.IsNotExist(err) {
		t.Errorf("the failed attempt's cause is still there after a success: %v", err)
	}
}
