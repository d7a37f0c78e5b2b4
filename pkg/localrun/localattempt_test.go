package localrun

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// startAttempt removes a run folder only when its record names the same
// pool and run; anything else there is left as it was, with an error
// naming the folder.
func TestStartAttemptNeverRemovesAFolderItDidNotCreate(t *testing.T) {
	record := func(pool, run string) string {
		b, _ := json.Marshal(attempt{Run: run, Pool: pool, Tasks: map[string]string{"render": "Running"}, Order: []string{"render"}})
		return string(b)
	}
	cases := []struct {
		name  string
		files map[string]string // in the run folder; nil: no folder
		want  string            // error substring; "" to succeed
	}{
		{"another pool's run of the same name", map[string]string{attemptFile: record("long-infra", "kiln-x-1"), "work/keep": "x"}, "belongs to run kiln-x-1 of pool long-infra"},
		{"another run's record", map[string]string{attemptFile: record("worker", "kiln-y-1")}, "belongs to run kiln-y-1"},
		{"a folder with no record", map[string]string{"notes.txt": "mine"}, "holds no readable " + attemptFile},
		{"a folder whose record is not one", map[string]string{attemptFile: "[1,2]"}, "not an attempt record"},
		{"no folder", nil, ""},
		{"this pool's previous attempt", map[string]string{attemptFile: record("worker", "kiln-x-1"), "work/old": "x"}, ""},
		{"a record from before records named the pool", map[string]string{attemptFile: `{"run":"kiln-x-1","tasks":{}}`}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runDir := filepath.Join(t.TempDir(), "runs", "kiln-x-1")
			for name, body := range c.files {
				p := filepath.Join(runDir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var log bytes.Buffer
			a, err := startAttempt(&log, runDir, "worker", "kiln-x-1")
			if c.want != "" {
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), runDir) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, runDir, c.want)
				}
				for name, body := range c.files {
					if got, rerr := os.ReadFile(filepath.Join(runDir, name)); rerr != nil || string(got) != body {
						t.Errorf("%s after the refusal: %q (%v), want %q", name, got, rerr, body)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			entries, err := os.ReadDir(runDir)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if diff := cmp.Diff([]string{attemptFile}, names); diff != "" {
				t.Errorf("run folder after start (-want +got):\n%s", diff)
			}
			var got attempt
			if b, err := os.ReadFile(filepath.Join(runDir, attemptFile)); err != nil || json.Unmarshal(b, &got) != nil || got.Pool != "worker" || got.Run != "kiln-x-1" {
				t.Errorf("new record %+v (%v)", got, err)
			}
			if a.path != filepath.Join(runDir, attemptFile) {
				t.Errorf("record path %s", a.path)
			}
			if siblings, _ := os.ReadDir(filepath.Dir(runDir)); len(siblings) != 1 {
				t.Errorf("runs folder holds %d entries, want the run folder alone", len(siblings))
			}
			if c.files != nil && !strings.Contains(log.String(), "redoing run kiln-x-1") {
				t.Errorf("log %q: want the redo said", log.String())
			}
		})
	}
}

// A run folder that is a symlink (to somewhere else) is not followed,
// emptied or removed.
func TestStartAttemptRefusesASymlinkedRunFolder(t *testing.T) {
	elsewhere := t.TempDir()
	if err := os.WriteFile(filepath.Join(elsewhere, attemptFile), []byte(`{"run":"kiln-x-1","pool":"worker"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(t.TempDir(), "kiln-x-1")
	if err := os.Symlink(elsewhere, runDir); err != nil {
		t.Fatal(err)
	}
	if _, err := startAttempt(&bytes.Buffer{}, runDir, "worker", "kiln-x-1"); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Fatalf("error %v, want the symlink refused", err)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, attemptFile)); err != nil {
		t.Errorf("the symlink's target lost its file: %v", err)
	}
}
