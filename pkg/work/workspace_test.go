package work

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLayoutIsTheDocumentedOne: every path of the workspace is where
// docs/architecture.md ("The work workspace") puts it. Tasks of one run
// may come from different kiln versions (a retry after an upgrade), so a
// path never moves.
func TestLayoutIsTheDocumentedOne(t *testing.T) {
	w := Workspace{Root: "/w"}
	got := map[string]string{
		"RenderedPath":           w.RenderedPath(),
		"InputsPath":             w.InputsPath(),
		"ModuleDay0Path":         w.ModuleDay0Path(),
		"MCOInputsPath":          w.MCOInputsPath(),
		"StageDir(kmod-build)":   w.StageDir(StageKmodBuild),
		"StageDir(kmod-sign)":    w.StageDir(StageKmodSign),
		"BuildReportPath":        w.BuildReportPath(),
		"SignResultPath":         w.SignResultPath(),
		"PredictionPath":         w.PredictionPath(),
		"StageDir(verify)":       w.StageDir(StageVerify),
		"TimelinePath":           w.TimelinePath(),
		"DriftJSONPath":          w.DriftJSONPath(),
		"BootImageReportPath":    w.BootImageReportPath(),
		"BootImageManifestsPath": w.BootImageManifestsPath(),
		"StageDir(report)":       w.StageDir(StageReport),
		"CausePath(image-sign)":  w.CausePath(StageImageSign),
		"CausePath(kmod-build)":  w.CausePath(StageKmodBuild),
		"CausePath(bootimages)":  w.CausePath(StageBootImages),
	}
	want := map[string]string{
		"RenderedPath":           "/w/render/rendered.json",
		"InputsPath":             "/w/render/inputs.json",
		"ModuleDay0Path":         "/w/render/moduleday0.json",
		"MCOInputsPath":          "/w/render/mco-inputs.json",
		"StageDir(kmod-build)":   "/w/kmod",
		"StageDir(kmod-sign)":    "/w/kmod",
		"BuildReportPath":        "/w/image/build.json",
		"SignResultPath":         "/w/image/sign.json",
		"PredictionPath":         "/w/image/prediction.json",
		"StageDir(verify)":       "/w/image",
		"TimelinePath":           "/w/rollout/timeline.json",
		"DriftJSONPath":          "/w/rollout/drift.json",
		"BootImageReportPath":    "/w/bootimages/report.json",
		"BootImageManifestsPath": "/w/bootimages/manifests",
		"StageDir(report)":       "/w/report",
		"CausePath(image-sign)":  "/w/image/image-sign.error",
		"CausePath(kmod-build)":  "/w/kmod/kmod-build.error",
		"CausePath(bootimages)":  "/w/bootimages/bootimages.error",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workspace paths (-want +got):\n%s", diff)
	}
}

// TestReadersOfAbsentRecords: a record a stage did not leave reads as
// absent, not as an error, where the reader's caller decides (the
// prediction record, the kmod image); render's prediction inputs report
// os.ErrNotExist, which image-sign and rollout test for.
func TestReadersOfAbsentRecords(t *testing.T) {
	w := Workspace{Root: t.TempDir()}
	if _, ok, err := w.ReadPredictionRecord(); ok || err != nil {
		t.Errorf("ReadPredictionRecord on an empty workspace: ok %v, err %v; want absent", ok, err)
	}
	if _, ok, err := w.KmodImage(); ok || err != nil {
		t.Errorf("KmodImage on an empty workspace: ok %v, err %v; want absent", ok, err)
	}
	if _, err := w.ReadMCOInputs(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadMCOInputs on an empty workspace: %v, want os.ErrNotExist", err)
	}
	if _, err := w.ReadBuildReport(); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "reading build report: ") {
		t.Errorf("ReadBuildReport on an empty workspace: %v, want os.ErrNotExist named as the build report", err)
	}
}

// TestReadMCOInputsRefusesWhatRenderDidNotWrite: mco-inputs.json is read
// only as a regular file within its cap, and only when it names a pool
// and MachineConfigs; each refusal names the file and the rule.
func TestReadMCOInputsRefusesWhatRenderDidNotWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		make    func(path string) error
		wantErr string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "not a regular file"},
		{"over the cap", func(p string) error {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return os.Truncate(p, maxMCOInputs+1)
		}, "reading the prediction's inputs (render's mco-inputs.json): larger than 67108864 bytes"},
		{"not JSON", func(p string) error { return os.WriteFile(p, []byte("{"), 0o644) }, "decoding "},
		{"no pool", func(p string) error {
			return os.WriteFile(p, []byte(`{"machineConfigs":[{"metadata":{"name":"a"}}]}`), 0o644)
		}, "mco-inputs.json names no pool or no MachineConfig"},
		{"no MachineConfig", func(p string) error {
			return os.WriteFile(p, []byte(`{"pool":{"metadata":{"name":"worker"}}}`), 0o644)
		}, "mco-inputs.json names no pool or no MachineConfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Workspace{Root: t.TempDir()}
			if err := os.MkdirAll(filepath.Dir(w.MCOInputsPath()), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := tc.make(w.MCOInputsPath()); err != nil {
				t.Fatal(err)
			}
			in, err := w.ReadMCOInputs()
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ReadMCOInputs = %v, %v; want an error containing %q", in, err, tc.wantErr)
			}
		})
	}
}

// FuzzRecordReaders feeds any bytes to the readers of the records one
// stage reads from another: none panics, and what one accepts holds what
// its callers rely on (a pool and MachineConfigs; a kmod image by name).
func FuzzRecordReaders(f *testing.F) {
	for _, name := range []string{"mco-inputs.json", "kmod-sign.json", "image-build.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "records", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"image":"q.io/k@sha256:01","digest":"sha256:01"}`))
	f.Add([]byte(`{"image":"q.io/os@sha256:01","name":"rendered-worker-1","hash":"sha256:02"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		w := Workspace{Root: t.TempDir()}
		for _, p := range []string{w.MCOInputsPath(), w.PredictionPath(), filepath.Join(w.StageDir(StageKmodSign), KmodSignFile), w.BuildReportPath()} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if in, err := w.ReadMCOInputs(); err == nil && (in.Pool == nil || len(in.Configs) == 0) {
			t.Errorf("ReadMCOInputs accepted %q without a pool or MachineConfigs", data)
		}
		if k, ok, err := w.KmodImage(); err == nil && ok && k.Image == "" {
			t.Errorf("KmodImage accepted %q without an image", data)
		} else if err != nil && ok {
			t.Errorf("KmodImage gave ok with error %v", err)
		}
		if _, ok, err := w.ReadPredictionRecord(); !ok && err == nil {
			t.Errorf("ReadPredictionRecord: a present file read as absent")
		}
		if rep, err := w.ReadBuildReport(); err == nil && rep == nil {
			t.Errorf("ReadBuildReport: no report and no error")
		}
	})
}
