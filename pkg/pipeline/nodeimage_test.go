package pipeline

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunNodeImagePipelineShape runs the repository's node-image Pipeline
// and Tasks unchanged, with a stand-in kiln-steps (stageMain) so the
// Tekton semantics the pipeline relies on are checked without a registry:
// kmod stages skipped by `when` do not skip image-build, results flow into
// later tasks' args, a failure stops the chain, the optional reproduce
// stage holds rollout back only when it runs and fails, and the finally
// report gets every status. The real stages are tested in their own packages;
// TestRunBootImagesPipeline runs one for real through the executor.
func TestRunNodeImagePipelineShape(t *testing.T) {
	// image-build's results in Chains' shape: the repository and the
	// digest; the later stages get them joined by digest.
	const repo, digest = "registry.local/os-worker", "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const image = repo + "@" + digest
	results := map[string]map[string]string{
		"render": {"RENDERED_NAME": "rendered-worker-0123", "CONFIG_HASH": "sha256:ab", "BASE_IMAGE": "quay.io/base@sha256:00",
			"HAS_KMOD": "false", "KMOD_BUILD": "false", "KMOD_SIGN": "false"},
		"image-build": {"IMAGE_URL": repo, "IMAGE_DIGEST": digest, "REUSED": "false"},
		"image-sign":  {"SIGNATURE_REF": "sig", "ATTESTATION_REF": "att"},
		"verify":      {"VERIFIED": "true"},
		"rollout":     {"ROLLOUT_STATE": "Done", "UPDATED_NODES": "3"},
		"bootimages":  {"MACHINESETS_PATCHED": "0", "MACHINESETS_SKIPPED": "0"},
		"reproduce":   {"REPRODUCED": "true", "DIFF": "identical"},
		"kmod-build":  {"KMOD_IMAGE_URL": "registry.local/kmod", "KMOD_IMAGE_DIGEST": digest, "REUSED": "false", "REUSE_REJECTED": ""},
	}
	// An upgrade-ahead run's target release: its base OS, extensions and
	// driver-toolkit images by digest.
	const targetOS = "quay.io/ocp@sha256:0101010101010101010101010101010101010101010101010101010101010101"
	const targetExt = "quay.io/ocp@sha256:0202020202020202020202020202020202020202020202020202020202020202"
	const targetDTK = "quay.io/ocp@sha256:0303030303030303030303030303030303030303030303030303030303030303"
	cases := []struct {
		name, fail, bootImages string
		reproduce              string // the reproduce param; "" leaves the default
		rollout                string // the rollout param; "" leaves the default
		status                 string
		tasks                  map[string]string
		calls                  []string          // substrings of the stage invocations, in order
		params                 map[string]string // more params
		kmod                   bool              // render asks for a kmod build
		reused                 bool              // image-build reused an image it proved
	}{{
		name: "no kmod", bootImages: "true", status: "Completed",
		tasks: map[string]string{"render": StateSucceeded, "kmod-build": StateSkipped, "kmod-sign": StateSkipped,
			"image-build": StateSucceeded, "image-sign": StateSucceeded, "verify": StateSucceeded,
			"reproduce": StateSkipped, "rollout": StateSucceeded, "bootimages": StateSucceeded, "report": StateSucceeded},
		calls: []string{"render --pool=worker --source=dir:/m", "image-build --pool=worker", "--base=quay.io/base@sha256:00 --repository=registry.local/os-worker",
			"image-sign", "--image=" + image, "verify", "rollout", "bootimages", "report --pool=worker",
			"--aggregate=Completed render=Succeeded kmod-build=None kmod-sign=None image-build=Succeeded image-sign=Succeeded verify=Succeeded reproduce=None rollout=Succeeded bootimages=Succeeded"},
	}, {
		name: "verify fails", fail: "verify", bootImages: "true", status: "Failed",
		tasks: map[string]string{"render": StateSucceeded, "kmod-build": StateSkipped, "kmod-sign": StateSkipped,
			"image-build": StateSucceeded, "image-sign": StateSucceeded, "verify": StateFailed,
			"rollout": StateSkipped, "bootimages": StateSkipped, "report": StateSucceeded},
		calls: []string{"verify", "verify", "verify", "report", "--aggregate=Failed", "verify=Failed reproduce=None rollout=None bootimages=None"},
	}, {
		name: "no boot images", bootImages: "false", status: "Completed",
		tasks: map[string]string{"render": StateSucceeded, "kmod-build": StateSkipped, "kmod-sign": StateSkipped,
			"image-build": StateSucceeded, "image-sign": StateSucceeded, "verify": StateSucceeded,
			"rollout": StateSucceeded, "bootimages": StateSkipped, "report": StateSucceeded},
		calls: []string{"rollout", "report", "bootimages=None"},
	}, {
		// The optional independent rebuild: rollout waits for it.
		name: "reproduce gates rollout", reproduce: "true", bootImages: "false", status: "Completed",
		tasks: map[string]string{"image-sign": StateSucceeded, "verify": StateSucceeded, "reproduce": StateSucceeded,
			"rollout": StateSucceeded},
		calls: []string{"image-sign", "reproduce --image=" + image + " --deep=true", "rollout"},
	}, {
		name: "reproduce fails", reproduce: "true", fail: "reproduce", bootImages: "true", status: "Failed",
		tasks: map[string]string{"image-sign": StateSucceeded, "verify": StateSucceeded, "reproduce": StateFailed,
			"rollout": StateSkipped, "bootimages": StateSkipped, "report": StateSucceeded},
		calls: []string{"reproduce", "report", "--aggregate=Failed", "rollout=None"},
	}, {
		// The trigger's upgrade-ahead runs: every stage up to verify, and
		// nothing that changes the cluster.
		name: "rollout false builds, signs and verifies, and rolls nothing out", rollout: "false", bootImages: "false", status: "Completed",
		tasks: map[string]string{"render": StateSucceeded, "image-build": StateSucceeded, "image-sign": StateSucceeded,
			"verify": StateSucceeded, "rollout": StateSkipped, "bootimages": StateSkipped, "report": StateSucceeded},
		calls: []string{"image-build", "image-sign", "verify", "report", "--aggregate=Completed",
			"verify=Succeeded reproduce=None rollout=None bootimages=None"},
	}, {
		// A reused image is already signed and attested: image-sign is
		// skipped, and verify too, since rollout checks the same policy
		// before any write.
		name: "a reused image goes from image-build to rollout", reused: true, bootImages: "false", status: "Completed",
		tasks: map[string]string{"render": StateSucceeded, "image-build": StateSucceeded, "image-sign": StateSkipped,
			"verify": StateSkipped, "reproduce": StateSkipped, "rollout": StateSucceeded, "report": StateSucceeded},
		calls: []string{"image-build", "rollout --pool=worker", "--image=" + image, "report",
			"image-build=Succeeded image-sign=None verify=None reproduce=None rollout=Succeeded"},
	}, {
		// Without rollout (upgrade-ahead) nothing checks the policy after
		// verify: a reused image is still verified.
		name: "a reused image is verified when no rollout follows", reused: true, rollout: "false", bootImages: "false", status: "Completed",
		tasks: map[string]string{"image-build": StateSucceeded, "image-sign": StateSkipped, "verify": StateSucceeded,
			"rollout": StateSkipped, "report": StateSucceeded},
		calls: []string{"image-build", "verify --pool=worker", "--image=" + image, "report", "image-sign=None verify=Succeeded"},
	}, {
		// Without the target's images every stage keeps the running
		// release's (empty flags: the payload ConfigMap's).
		name: "no target release renders and builds kmods on the running release", kmod: true, bootImages: "false", status: "Completed",
		tasks: map[string]string{"render": StateSucceeded, "kmod-build": StateSucceeded, "image-build": StateSucceeded},
		calls: []string{"render --pool=worker --source=dir:/m --fetch-timeout=30s --os-image= --extensions-image= --release-version= ",
			"kmod-build --pool=worker", "--os-image= --dtk-image= --rebuild=false --target-release= "},
	}, {
		// An upgrade-ahead run: render renders for the target release (its
		// base becomes BASE_IMAGE, which image-build layers on) and
		// kmod-build builds on its OS and driver-toolkit, for the target
		// kernel's tag (--target-release).
		name: "target release images reach render and kmod-build", kmod: true, rollout: "false", bootImages: "false", status: "Completed",
		params: map[string]string{"target-release": "4.19.1", "os-image": targetOS, "extensions-image": targetExt, "dtk-image": targetDTK},
		tasks:  map[string]string{"render": StateSucceeded, "kmod-build": StateSucceeded, "image-build": StateSucceeded, "rollout": StateSkipped},
		calls: []string{"render --pool=worker --source=dir:/m --fetch-timeout=30s --os-image=" + targetOS + " --extensions-image=" + targetExt + " --release-version=4.19.1 ",
			"kmod-build --pool=worker", "--os-image=" + targetOS + " --dtk-image=" + targetDTK + " --rebuild=false --target-release=4.19.1 ", "image-build"},
	}}
	ctx := context.Background()
	tasks, err := LoadTasks(ctx, "../../tasks")
	if err != nil {
		t.Fatal(err)
	}
	p, err := LoadPipeline(ctx, "../../pipelines/node-image.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := map[string]map[string]string{}
			for k, v := range results {
				res[k] = v
			}
			if tc.reused {
				res["image-build"] = map[string]string{"IMAGE_URL": repo, "IMAGE_DIGEST": digest, "REUSED": "true"}
			}
			if tc.kmod {
				res["render"] = map[string]string{"RENDERED_NAME": "rendered-worker-0123", "CONFIG_HASH": "sha256:ab", "BASE_IMAGE": "quay.io/base@sha256:00",
					"HAS_KMOD": "true", "KMOD_BUILD": "true", "KMOD_SIGN": "false"}
			}
			stageResults, _ := json.Marshal(res)
			trace := filepath.Join(t.TempDir(), "trace")
			e := &Executor{Tasks: tasks, StepBinary: os.Args[0],
				Env: []string{"KILN_EXEC_HELPER=stage", "KILN_TRACE=" + trace, "KILN_STAGE_RESULTS=" + string(stageResults), "KILN_STAGE_FAIL=" + tc.fail}}
			ws := map[string]string{"work": t.TempDir(), "signing-key": t.TempDir(), "public-key": t.TempDir()}
			params := map[string]string{"pool": "worker", "repository": "registry.local/os-worker",
				"source": "dir:/m", "update-boot-images": tc.bootImages}
			if tc.reproduce != "" {
				params["reproduce"] = tc.reproduce
			}
			if tc.rollout != "" {
				params["rollout"] = tc.rollout
			}
			for k, v := range tc.params {
				params[k] = v
			}
			run, err := e.Run(ctx, p, params, ws, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != tc.status {
				t.Errorf("status %s, want %s (%v)", run.Status, tc.status, run.Err())
			}
			for n, want := range tc.tasks {
				if got := run.Task(n).Status; got != want {
					t.Errorf("task %s = %s (%s), want %s", n, got, run.Task(n).Reason, want)
				}
			}
			if tc.fail == "" && (run.Results["IMAGE_URL"] != repo || (tc.rollout == "" && run.Results["ROLLOUT_STATE"] != "Done")) {
				t.Errorf("pipeline results %v", run.Results)
			}
			b, _ := os.ReadFile(trace)
			rest := string(b)
			for _, c := range tc.calls {
				i := strings.Index(rest, c)
				if i < 0 {
					t.Fatalf("no %q after the earlier calls in:\n%s", c, b)
				}
				rest = rest[i+len(c):]
			}
		})
	}
}
