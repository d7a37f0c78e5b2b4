package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kiln-dev/kiln/pkg/exitcode"
	workspace "github.com/kiln-dev/kiln/pkg/work"
)

// TestUnreadableRegistriesFolderFailsFirst runs every stage that reaches a
// registry with a --registries-config folder that does not exist: each
// fails with an error naming the flag and the folder, before any other
// input is read and before any registry request.
func TestUnreadableRegistriesFolderFailsFirst(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	img := host + "/kiln/os@sha256:" + strings.Repeat("0", 64)
	missing := filepath.Join(t.TempDir(), "no-registries-folder")
	cases := []struct {
		stage string
		args  []string
	}{
		{workspace.StageImageBuild, []string{"--base=" + img, "--repository=" + host + "/kiln/os"}},
		{workspace.StageImageSign, []string{"--image=" + img}},
		{workspace.StageVerify, []string{"--image=" + img}},
		{workspace.StageKmodBuild, []string{"--os-image=" + img, "--dtk-image=" + img}},
		{workspace.StageKmodSign, nil},
		{workspace.StageRollout, []string{"--image=" + img, "--source=dir:" + t.TempDir()}},
	}
	for _, c := range cases {
		t.Run(c.stage, func(t *testing.T) {
			work := t.TempDir()
			args := append([]string{c.stage, "--work=" + work, "--pool=worker", "--results-dir=" + filepath.Join(work, "results"),
				"--insecure-registry=" + host, "--registries-config=" + missing}, c.args...)
			var out, errs bytes.Buffer
			code := Execute(context.Background(), NewSteps(), args, &out, &errs)
			if code == exitcode.ExitOK {
				t.Fatalf("exit %d with a missing registries folder; stderr: %s", code, errs.String())
			}
			if msg := errs.String(); !strings.Contains(msg, "--registries-config") || !strings.Contains(msg, missing) {
				t.Errorf("stderr %q: want the flag and the folder named", msg)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d registry requests before the registries folder was read", n)
			}
		})
	}
}
