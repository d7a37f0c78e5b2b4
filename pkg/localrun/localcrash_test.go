//go:build linux

package localrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/safepath"
	"github.com/kiln-dev/kiln/pkg/trigger"
	workspace "github.com/kiln-dev/kiln/pkg/work"
	"github.com/kiln-dev/kiln/test/env"
)

// roleEnv makes the test binary play a part of local mode: "trigger" is
// cmd/kiln-trigger's main, "steps" a stand-in kiln-steps, "sleeper" a tool a
// step started. Real processes, no second binary to build.
const roleEnv = "KILN_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "trigger":
		os.Exit(triggerMain(os.Args[1:]))
	case "steps":
		os.Exit(stepsMain(os.Args[1:]))
	case "sleeper":
		os.Exit(sleeperMain())
	}
	os.Exit(m.Run())
}

// triggerMain is cmd/kiln-trigger's main for the flags the tests pass (pkg/
// parses no command line: cmd/cli does); its steps are the stand-in.
func triggerMain(args []string) int {
	o := trigger.DefaultOptions()
	values := map[string]*string{"--source": &o.Source, "--output-dir": &o.Output, "--steps": &o.Local.StepBinary, "--root": &o.Local.Root}
	for i := 0; i < len(args); i++ {
		switch p, ok := values[args[i]]; {
		case args[i] == "--once":
			o.Once = true
		case ok && i+1 < len(args):
			*p = args[i+1]
			i++
		default:
			fmt.Fprintf(os.Stderr, "trigger: unexpected argument %q\n", args[i])
			return 2
		}
	}
	_ = os.Setenv(roleEnv, "steps")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "trigger: %v\n", err)
		return 1
	}
	return 0
}

// standInResults are what each stage of the node-image pipeline reports.
var standInResults = map[string]map[string]string{
	"render": {"RENDERED_NAME": "rendered-x-0123", "CONFIG_HASH": "sha256:ab", "BASE_IMAGE": "quay.io/base@sha256:00",
		"HAS_KMOD": "false", "KMOD_BUILD": "false", "KMOD_SIGN": "false"},
	"image-build": {"IMAGE_URL": "registry.local/os", "IMAGE_DIGEST": "sha256:1111111111111111111111111111111111111111111111111111111111111111", "REUSED": "false"},
	"image-sign":  {"SIGNATURE_REF": "sig", "ATTESTATION_REF": "att"},
	"verify":      {"VERIFIED": "true"},
	"rollout":     {"ROLLOUT_STATE": "Done", "UPDATED_NODES": "3"},
}

// stepsMain stands in for kiln-steps: it logs "<stage> <pid>" to
// $KILN_TEST_TRACE, leaves a marker file in its task folder, writes the
// stage's results and, in stage $KILN_TEST_HOLD, starts a sleeper and
// sleeps until it is killed; stage $KILN_TEST_FAIL exits 3 after two lines.
func stepsMain(args []string) int {
	stage, dir, work := args[0], os.Getenv("KILN_RESULTS_DIR"), ""
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--results-dir="); ok {
			dir = v
		}
		if v, ok := strings.CutPrefix(a, "--work="); ok {
			work = v
		}
	}
	if f, err := os.OpenFile(os.Getenv("KILN_TEST_TRACE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		cwd, _ := os.Getwd()
		fmt.Fprintf(f, "%s %d %s\n", stage, os.Getpid(), cwd)
		f.Close()
	}
	if err := os.WriteFile(fmt.Sprintf("marker-%d", os.Getpid()), nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if stage == os.Getenv("KILN_TEST_FAIL") {
		fmt.Printf("%s: working\n", stage)
		fmt.Fprintf(os.Stderr, "kiln-steps %s: registry unreachable\n", stage)
		if err := (workspace.Workspace{Root: work}).WriteCause(stage, errors.New("registry unreachable")); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return 3
	}
	if stage == os.Getenv("KILN_TEST_HOLD") {
		sleeper := exec.Command(os.Args[0])
		sleeper.Env = append(os.Environ(), roleEnv+"=sleeper")
		if err := sleeper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(time.Hour)
	}
	for k, v := range standInResults[stage] {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// sleeperMain ignores SIGTERM, as a stubborn tool might, writes
// "<step pid> <own pid>" to $KILN_TEST_PIDS and sleeps.
func sleeperMain() int {
	signal.Ignore(syscall.SIGTERM)
	path := os.Getenv("KILN_TEST_PIDS")
	if err := safepath.WriteFileAtomic(path, []byte(fmt.Sprintf("%d %d", os.Getppid(), os.Getpid())), 0o644); err != nil {
		return 1
	}
	time.Sleep(time.Hour)
	return 0
}

// crashRig is a manifests folder (pools infra and worker), an output
// folder and the stand-in's trace and pid files.
type crashRig struct {
	src, out, trace, pids string
}

func newCrashRig(t *testing.T) *crashRig {
	dir := t.TempDir()
	r := &crashRig{src: localDir(t), out: filepath.Join(dir, "out"), trace: filepath.Join(dir, "trace"), pids: filepath.Join(dir, "pids")}
	t.Setenv("KILN_TEST_TRACE", r.trace)
	t.Setenv("KILN_TEST_PIDS", r.pids)
	// Steps of in-process runs inherit this process's environment.
	t.Setenv(roleEnv, "steps")
	return r
}

func (r *crashRig) options() trigger.Options {
	return trigger.Options{Source: "dir:" + r.src, Once: true, Output: r.out,
		Local: trigger.LocalOptions{StepBinary: os.Args[0], Root: env.RepoRoot()}}
}

// startTriggerProcess runs the trigger as its own process, holding in
// stage hold, and waits until that stage's sleeper is up.
func (r *crashRig) startTriggerProcess(t *testing.T, hold string) (*exec.Cmd, *bytes.Buffer, []int) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(os.Args[0], "--source", "dir:"+r.src, "--once", "--output-dir", r.out, "--steps", os.Args[0], "--root", env.RepoRoot())
	cmd.Env = append(os.Environ(), roleEnv+"=trigger", "KILN_TEST_HOLD="+hold)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(r.pids); err == nil {
			var pids []int
			for _, f := range strings.Fields(string(b)) {
				n, _ := strconv.Atoi(f)
				pids = append(pids, n)
			}
			return cmd, &out, pids
		}
		select {
		case <-exited:
			t.Fatalf("trigger ended before stage %s held:\n%s", hold, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("stage %s did not start within 60s:\n%s", hold, out.String())
		}
	}
}

// waitGone fails unless every pid is gone (or a zombie) within d.
func waitGone(t *testing.T, pids []int, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		var alive []int
		for _, p := range pids {
			if processAlive(p) {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still run %s after the trigger was stopped", alive, d)
		}
	}
}

// processAlive: pid exists and is not a zombie (in a container whose init
// does not reap, orphans stay zombies; they run nothing).
func processAlive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestStoppedTriggerTakesStepAndGrandchildDown: killed outright or asked
// to stop, the trigger leaves no step running and no process a step
// started, even one that ignores SIGTERM (stopped after the 5s grace).
func TestStoppedTriggerTakesStepAndGrandchildDown(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			r := newCrashRig(t)
			cmd, _, pids := r.startTriggerProcess(t, "render")
			if len(pids) != 2 || !processAlive(pids[0]) || !processAlive(pids[1]) {
				t.Fatalf("step and sleeper pids %v", pids)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitGone(t, pids, 15*time.Second)
		})
	}
}

// TestSecondRunOnSameOutFailsNamingHolder: while a run holds the output
// folder another fails at once, naming the holder, and leaves the holder's
// run folder alone; once the holder is killed the kernel drops its lock,
// and the next run proceeds although the dead holder's text is still in
// the lock file.
func TestSecondRunOnSameOutFailsNamingHolder(t *testing.T) {
	r := newCrashRig(t)
	holder, _, pids := r.startTriggerProcess(t, "render")
	host, _ := os.Hostname()
	start := time.Now()
	var log bytes.Buffer
	err := runLocal(context.Background(), r.options(), &log)
	if err == nil {
		t.Fatalf("second run on a held output folder succeeded:\n%s", log.String())
	}
	for _, want := range []string{"output folder " + r.out + " is in use", fmt.Sprintf("pid %d on host %s since ", holder.Process.Pid, host), "command ", "--once", filepath.Join(r.out, lockFile)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("second run took %s to fail", d)
	}
	if runs, _ := filepath.Glob(filepath.Join(r.out, "runs", "*", attemptFile)); len(runs) != 1 {
		t.Errorf("the holder's run folder: %v", runs)
	}

	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, append(pids, holder.Process.Pid), 15*time.Second)
	if b, _ := os.ReadFile(filepath.Join(r.out, lockFile)); !strings.Contains(string(b), fmt.Sprintf("pid %d\n", holder.Process.Pid)) {
		t.Fatalf("the killed holder's lock file: %q", b)
	}
	log.Reset()
	if err := runLocal(context.Background(), r.options(), &log); err != nil {
		t.Fatalf("run after the holder was killed: %v\n%s", err, log.String())
	}
	if rows := summaryRows(log.String()); rows["infra"] == nil || rows["infra"][3] != "Completed" || rows["worker"] == nil || rows["worker"][3] != "Completed" {
		t.Fatalf("run after the holder was killed:\n%s", log.String())
	}
	if b, _ := os.ReadFile(filepath.Join(r.out, lockFile)); len(b) != 0 {
		t.Errorf("lock file after a run ended: %q", b)
	}
}

// TestKilledRunIsRedoneOnRerun: a run killed in image-sign is, on rerun,
// redone from scratch, says so naming the task, leaves nothing of the
// killed attempt in its folder and records both pools' success.
func TestKilledRunIsRedoneOnRerun(t *testing.T) {
	r := newCrashRig(t)
	holder, _, pids := r.startTriggerProcess(t, "image-sign")
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pids, 15*time.Second)
	first, _ := os.ReadFile(r.trace)
	if !strings.Contains(string(first), "image-build ") || strings.Contains(string(first), "verify ") {
		t.Fatalf("first attempt's stages:\n%s", first)
	}

	var log bytes.Buffer
	if err := runLocal(context.Background(), r.options(), &log); err != nil {
		t.Fatalf("rerun: %v\n%s", err, log.String())
	}
	st, err := ReadState(r.out)
	if err != nil {
		t.Fatal(err)
	}
	infra, worker := st.Pools["infra"], st.Pools["worker"]
	if infra.Run == "" || worker.Run == "" || infra.Fingerprint == "" || worker.Fingerprint == "" {
		t.Fatalf("state after the rerun: %+v", st)
	}
	text := log.String()
	if want := "redoing run " + infra.Run + ": previous attempt was interrupted at task image-sign"; !strings.Contains(text, want) {
		t.Errorf("rerun output lacks %q:\n%s", want, text)
	}
	if strings.Contains(text, "redoing run "+worker.Run) {
		t.Errorf("worker's run never started, yet the rerun redoes it:\n%s", text)
	}
	rows := summaryRows(text)
	if rows["infra"] == nil || rows["infra"][3] != "Completed" || rows["worker"] == nil || rows["worker"][3] != "Completed" {
		t.Fatalf("summary after the rerun:\n%s", text)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(first)), "\n") {
		f := strings.Fields(line)
		if _, err := os.Stat(filepath.Join(f[2], "marker-"+f[1])); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the killed attempt's %s output is still in the run folder (%v)", f[0], err)
		}
	}
	for _, run := range []string{infra.Run, worker.Run} {
		b, err := os.ReadFile(filepath.Join(r.out, "runs", run, attemptFile))
		if err != nil || !strings.Contains(string(b), `"ended": "Completed"`) {
			t.Errorf("%s's attempt record: %s (%v)", run, b, err)
		}
	}
	log.Reset()
	if err := runLocal(context.Background(), r.options(), &log); err != nil || !strings.Contains(log.String(), "nothing to do") {
		t.Errorf("third run: %v\n%s", err, log.String())
	}
}
