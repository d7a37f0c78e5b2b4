package pipeline

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/safepath"
)

// TestMain turns the test binary into the steps' helper when the executor
// starts it with KILN_EXEC_HELPER=1: no second binary to build.
func TestMain(m *testing.M) {
	switch os.Getenv("KILN_EXEC_HELPER") {
	case "1":
		os.Exit(helperMain(os.Args[1:]))
	case "stage":
		os.Exit(stageMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// helperMain is a tiny step: it records start/end in $KILN_TRACE, sleeps,
// writes results and exits with the code asked for.
func helperMain(args []string) int {
	fs := flag.NewFlagSet("helper", flag.ContinueOnError)
	var results, big, copyRes multi
	resultsDir := fs.String("results-dir", "", "")
	outPath := fs.String("out-path", "", "")
	work := fs.String("work", "", "")
	bound := fs.String("bound", "", "")
	greeting := fs.String("greeting", "", "")
	retry := fs.Int("retry", 0, "")
	fs.String("taskrun", "", "")
	name := fs.String("name", "", "")
	sleep := fs.Duration("sleep", 0, "")
	exit := fs.Int("exit", 0, "")
	failBelow := fs.Int("fail-below", 0, "")
	touch := fs.String("touch", "", "")
	echo := fs.Bool("echo-greeting", false, "")
	spawn := fs.Bool("spawn", false, "")
	ignoreTerm := fs.Bool("ignore-term", false, "")
	reportTo := fs.String("report-to", "", "")
	fs.Var(&results, "result", "K=V")
	fs.Var(&big, "big", "K:N")
	fs.Var(&copyRes, "copy", "SRC:DST")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	trace := func(what string) {
		if f, err := os.OpenFile(os.Getenv("KILN_TRACE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s %d\n", what, *name, time.Now().UnixNano())
			f.Close()
		}
	}
	trace("start")
	defer trace("end")
	fmt.Printf("helper %s: args %q\n", *name, args)
	fmt.Fprintf(os.Stderr, "helper %s: to stderr\n", *name)
	if *outPath != "" && *outPath != filepath.Join(*resultsDir, "OUT") {
		fmt.Fprintf(os.Stderr, "$(results.OUT.path) %s is not under --results-dir %s\n", *outPath, *resultsDir)
		return 9
	}
	if *ignoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if *reportTo != "" {
		if err := reportPids(*reportTo); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if *spawn {
		if err := spawnGrandchild(os.Getenv("KILN_PIDS")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	time.Sleep(*sleep)
	write := func(k, v string) bool {
		if err := os.WriteFile(filepath.Join(*resultsDir, k), []byte(v), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return false
		}
		return true
	}
	for _, r := range results {
		k, v, _ := strings.Cut(r, "=")
		if !write(k, v) {
			return 1
		}
	}
	for _, b := range big {
		var k string
		var n int
		fmt.Sscanf(strings.Replace(b, ":", " ", 1), "%s %d", &k, &n)
		if !write(k, strings.Repeat("x", n)) {
			return 1
		}
	}
	for _, c := range copyRes {
		src, dst, _ := strings.Cut(c, ":")
		v, err := os.ReadFile(filepath.Join(*resultsDir, src))
		cwd, _ := os.Getwd()
		if err != nil || !write(dst, string(v)+" cwd="+cwd) {
			return 1
		}
	}
	if *echo && !write("OUT", fmt.Sprintf("%s env=%s bound=%s work=%q", *greeting, os.Getenv("GREETING"), *bound, *work)) {
		return 1
	}
	if *touch != "" {
		if err := os.WriteFile(filepath.Join(*work, *touch), []byte(*greeting), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	if *retry < *failBelow {
		fmt.Fprintf(os.Stderr, "failing on purpose at retry %d\n", *retry)
		return 4
	}
	return *exit
}

// stageMain stands in for kiln-steps where the real stage needs a cluster,
// a registry or buildah: it logs its subcommand and args to $KILN_TRACE,
// writes the results $KILN_STAGE_RESULTS (JSON: stage → name → value)
// gives it into $KILN_RESULTS_DIR or --results-dir, and fails when its
// stage is $KILN_STAGE_FAIL.
func stageMain(args []string) int {
	stage := args[0]
	dir := os.Getenv("KILN_RESULTS_DIR")
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--results-dir="); ok {
			dir = v
		}
	}
	if f, err := os.OpenFile(os.Getenv("KILN_TRACE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		fmt.Fprintf(f, "%s\n", strings.Join(args, " "))
		f.Close()
	}
	if os.Getenv("KILN_STAGE_FAIL") == stage {
		fmt.Fprintf(os.Stderr, "%s: failing on purpose\n", stage)
		return 1
	}
	all := map[string]map[string]string{}
	if err := json.Unmarshal([]byte(os.Getenv("KILN_STAGE_RESULTS")), &all); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	for k, v := range all[stage] {
		if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

// spawnGrandchild starts a helper that ignores SIGTERM and sleeps, as a
// tool a step runs might; once it ignores SIGTERM it writes
// "<this pid> <its pid>" to path.
func spawnGrandchild(path string) error {
	return exec.Command(os.Args[0], "--name=grandchild", "--sleep=1h", "--ignore-term", "--report-to="+path).Start()
}

func reportPids(path string) error {
	return safepath.WriteFileAtomic(path, []byte(fmt.Sprintf("%d %d", os.Getppid(), os.Getpid())), 0o644)
}
