package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kiln-dev/kiln/test/env"
)

// TestRunBootImagesPipeline runs the repository's pipelines/bootimages.yaml
// with tasks/*.yaml and the real kiln-steps on a folder of manifests (an
// AWS cluster from pkg/bootimage's fixtures: one stale opted-in
// MachineSet, one current, one owned by another controller).
func TestRunBootImagesPipeline(t *testing.T) {
	ctx := context.Background()
	tasks, err := LoadTasks(ctx, "../../tasks")
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadPipeline(ctx, "../../pipelines/bootimages.yaml")
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := filepath.Abs("testdata/bootimages/manifests")
	if err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(manifests, "cluster.yaml"))
	out := &syncBuffer{}
	e := &Executor{Tasks: tasks, StepBinary: env.BuildBinary(t, "./cmd/kiln-steps"), Out: out}
	work, runDir := t.TempDir(), t.TempDir()
	res, err := e.Run(ctx, p, map[string]string{"source": "dir:" + manifests, "stable-timeout": "1s"}, map[string]string{"work": work}, runDir)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Err(); err != nil {
		log, _ := os.ReadFile(filepath.Join(runDir, "bootimages", "bootimages.log"))
		t.Fatalf("%v\n%s", err, log)
	}
	var table strings.Builder
	_ = res.WriteTable(&table)
	t.Log("\n" + table.String())
	if res.Status != "Succeeded" {
		t.Errorf("status %s", res.Status)
	}
	want := map[string]string{"MACHINESETS_PATCHED": "1", "MACHINESETS_SKIPPED": "1"}
	for k, v := range want {
		if got := res.Task("bootimages").Results[k]; got != v {
			t.Errorf("task result %s = %q, want %q", k, got, v)
		}
		if got := res.Results[k]; got != v {
			t.Errorf("pipeline result %s = %q, want %q", k, got, v)
		}
	}
	files, _ := filepath.Glob(filepath.Join(work, "bootimages", "manifests", "machinesets", "*.yaml"))
	if len(files) != 1 || filepath.Base(files[0]) != "openshift-machine-api_ci-worker-us-east-1a.yaml" {
		t.Fatalf("patched MachineSets %v, want ci-worker-us-east-1a only", files)
	}
	b, _ := os.ReadFile(files[0])
	var ms struct {
		Kind string `json:"kind"`
		Spec struct {
			Template struct {
				Spec struct {
					ProviderSpec struct {
						Value struct {
							AMI struct {
								ID string `json:"id"`
							} `json:"ami"`
						} `json:"value"`
					} `json:"providerSpec"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &ms); err != nil || ms.Kind != "MachineSet" || ms.Spec.Template.Spec.ProviderSpec.Value.AMI.ID != "ami-0a1b2c3d4e5f60718" {
		t.Errorf("patched MachineSet kind %q ami %q (%v), want the stream's ami-0a1b2c3d4e5f60718", ms.Kind, ms.Spec.Template.Spec.ProviderSpec.Value.AMI.ID, err)
	}
	if rep, err := os.ReadFile(filepath.Join(work, "bootimages", "report.json")); err != nil || !strings.Contains(string(rep), "hive-worker") {
		t.Errorf("report.json = %s (%v), want the skipped owned MachineSet", rep, err)
	}
	if after, _ := os.ReadFile(filepath.Join(manifests, "cluster.yaml")); string(after) != string(before) {
		t.Error("the manifests folder changed")
	}
	if _, err := os.Stat(filepath.Join(runDir, "bootimages", "bootimages.log")); err != nil {
		t.Error(err)
	}
	for _, w := range []string{"bootimages   started (Task kiln-bootimages)", "bootimages   Succeeded in", "MACHINESETS_PATCHED=1 MACHINESETS_SKIPPED=1"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("progress lacks %q", w)
		}
	}
}
