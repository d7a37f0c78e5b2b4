package step

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

type fakeRunner struct {
	Options
	err error
	ran *bool
}

func (f *fakeRunner) AddFlags(fs *pflag.FlagSet) { f.Options.AddFlags(fs) }
func (f *fakeRunner) Run(context.Context, Streams) error {
	*f.ran = true
	if f.err != nil {
		return f.err
	}
	return f.Validate()
}

func TestMainDispatch(t *testing.T) {
	var ran bool
	cmds := []Command{
		{Name: "render", Summary: "render things", New: func() Runner { return &fakeRunner{ran: &ran} }},
		{Name: "fail", Summary: "always fails", New: func() Runner { return &fakeRunner{ran: &ran, err: errors.New("boom")} }},
		{Name: "rollout", Summary: "pending", New: Pending("rollout", "#6")},
	}
	cases := []struct {
		args     []string
		code     int
		ran      bool
		out, err string
	}{
		{args: []string{"--help"}, code: ExitOK, out: "render   render things"},
		{args: nil, code: ExitUsage, out: "Subcommands:"},
		{args: []string{"nope"}, code: ExitUsage, err: `unknown subcommand "nope"`},
		{args: []string{"render", "--pool", "worker", "--work", "/w"}, code: ExitOK, ran: true},
		{args: []string{"render", "--work", "/w"}, code: ExitUsage, ran: true, err: "--pool is required"},
		{args: []string{"render", "--bogus"}, code: ExitUsage, err: "unknown flag: --bogus"},
		{args: []string{"render", "extra"}, code: ExitUsage, err: "unexpected arguments: extra"},
		{args: []string{"render", "--help"}, code: ExitOK, err: "--pool string"},
		{args: []string{"fail", "--pool", "p"}, code: ExitFailure, ran: true, err: "kiln-steps fail: boom"},
		{args: []string{"rollout", "--pool", "p"}, code: ExitFailure, err: "lands with issue #6"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			ran = false
			var out, errb bytes.Buffer
			code := Main(context.Background(), "kiln-steps", cmds, tc.args, Streams{Out: &out, Err: &errb})
			if code != tc.code {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if ran != tc.ran {
				t.Errorf("ran: got %v, want %v", ran, tc.ran)
			}
			if !strings.Contains(out.String(), tc.out) {
				t.Errorf("stdout %q does not contain %q", out.String(), tc.out)
			}
			if !strings.Contains(errb.String(), tc.err) {
				t.Errorf("stderr %q does not contain %q", errb.String(), tc.err)
			}
		})
	}
}

func TestKubeOptionsSourceDir(t *testing.T) {
	cases := []struct {
		source, want string
		wantErr      bool
	}{
		{"cluster", "", false},
		{"dir:examples", "examples", false},
		{"dir:", "", true},
		{"git:foo", "", true},
		{"", "", true},
	}
	for _, tc := range cases {
		o := KubeOptions{Source: tc.source}
		got, err := o.SourceDir()
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("SourceDir(%q) = %q, %v; want %q, err %v", tc.source, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestWorkspaceLayout(t *testing.T) {
	w := Workspace{Root: "/work"}
	cases := []struct{ got, want string }{
		{w.RenderedPath(), "/work/render/rendered.json"},
		{w.InputsPath(), "/work/render/inputs.json"},
		{w.StageDir(StageKmodSign), "/work/kmod"},
		{w.StageDir(StageImageBuild), "/work/image"},
		{w.StageDir(StageVerify), "/work/image"},
		{w.StageDir(StageRollout), "/work/rollout"},
		{w.StageDir(StageBootImages), "/work/bootimages"},
	}
	for _, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}
