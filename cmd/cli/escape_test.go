package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// hostile is a registry error message that, printed raw, clears the
// screen, prints a fake success in red and retitles the terminal window.
const hostile = "denied \x1b[2J\x1b[31mFAKE-SUCCESS\x1b]0;owned\a"

// rawControls reports the first C0 control byte (other than a newline,
// which separates lines of output) or DEL in b, -1 when there is none.
func rawControls(b []byte) int {
	return bytes.IndexFunc(b, func(r rune) bool { return (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) })
}

// A step whose registry answers with an escape-laden error message, and
// the report that follows it with an escape-laden --trigger, print and
// record that message escaped everywhere it goes: the step's stderr, its
// cause file, the report's text, its summary files and the FAILURE
// result. The escaped form is still there to read.
func TestHostileRegistryMessageReachesNoOutputRaw(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		// The distribution spec's error body; JSON carries the escape
		// characters as \u001b and \u0007.
		_, _ = w.Write([]byte(`{"errors":[{"code":"DENIED","message":"denied \u001b[2J\u001b[31mFAKE-SUCCESS\u001b]0;owned\u0007"}]}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := host + "/kiln/os@sha256:" + strings.Repeat("0", 64)
	work := t.TempDir()
	ws := workspace.Workspace{Root: work}
	escaped := `denied \x1b[2J\x1b[31mFAKE-SUCCESS\x1b]0;owned\a`

	var out, errs bytes.Buffer
	code := Execute(context.Background(), NewSteps(), []string{workspace.StageRollout, "--work=" + work, "--pool=worker",
		"--results-dir=" + t.TempDir(), "--insecure-registry=" + host, "--image=" + img, "--source=dir:" + t.TempDir(),
		"--public-key=" + filepath.Join(env.CosignKeys(t), "cosign.pub")}, &out, &errs)
	if code == exitcode.ExitOK {
		t.Fatalf("rollout against a denying registry: exit 0")
	}
	cause, err := os.ReadFile(ws.CausePath(workspace.StageRollout))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"stderr": errs.Bytes(), "stdout": out.Bytes(), "cause file": cause} {
		if i := rawControls(b); i >= 0 {
			t.Errorf("%s holds a raw control byte %#x at %d: %q", name, b[i], i, b)
		}
	}
	if !strings.Contains(errs.String(), escaped) || !strings.Contains(string(cause), escaped) {
		t.Errorf("the registry's message, escaped, is missing:\nstderr %q\ncause %q", errs.String(), cause)
	}

	results := t.TempDir()
	out.Reset()
	errs.Reset()
	code = Execute(context.Background(), NewSteps(), []string{"report", "--work=" + work, "--pool=worker", "--results-dir=" + results,
		"--aggregate=Failed", "--trigger=manual\x1b]0;owned\a", "--changes=edited \u202eevil\u202c\n12:00:00 [rollout] rolled out", "rollout=Failed"}, &out, &errs)
	if code != exitcode.ExitOK {
		t.Fatalf("report: exit %d: %s", code, errs.String())
	}
	failure, err := os.ReadFile(filepath.Join(results, "FAILURE"))
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(work, "report", "summary.md"))
	txt, _ := os.ReadFile(filepath.Join(work, "report", "summary.txt"))
	for name, b := range map[string][]byte{"report stdout": out.Bytes(), "report stderr": errs.Bytes(), "FAILURE": failure, "summary.md": md, "summary.txt": txt} {
		if i := rawControls(b); i >= 0 {
			t.Errorf("%s holds a raw control byte %#x at %d: %q", name, b[i], i, b)
		}
		if bytes.ContainsRune(b, '\u202e') {
			t.Errorf("%s holds a raw bidi override: %q", name, b)
		}
	}
	if !strings.Contains(string(failure), escaped) {
		t.Errorf("FAILURE %q lacks the escaped message", failure)
	}
	for _, want := range []string{`manual\x1b]0;owned\a`, `edited \u202eevil\u202c\n12:00:00 [rollout] rolled out`} {
		if !strings.Contains(string(md), want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
}
