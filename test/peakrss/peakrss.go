package peakrss

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	envWorkload = "KILN_PEAKRSS_WORKLOAD"
	marker      = "KILN_PEAKRSS_KIB="
)

// Workload is the workload this process was started to measure, or ""
// in the parent.
func Workload() string { return os.Getenv(envWorkload) }

// Report prints this process's peak RSS for the parent to read; the child
// calls it after the workload. It is VmHWM from /proc/self/status, the
// high-water mark of this process's own memory map, not getrusage's
// ru_maxrss: os/exec starts the child on the parent's memory map (vfork)
// and Linux carries that map's high-water mark into ru_maxrss at exec, so
// ru_maxrss reported the parent's RSS whenever it was the larger (both
// workloads then read the same, a ratio of 1).
func Report() {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Printf("peakrss: %v\n", err)
		return
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			// "  123456 kB"
			fmt.Printf("\n%s%s\n", marker, strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return
		}
	}
	fmt.Printf("peakrss: no VmHWM in /proc/self/status\n")
}

// Measure runs b's benchmark in a child process with workload set and
// returns the child's peak RSS in MiB. The benchmark must be a top-level
// one that, when Workload() is not empty, runs that workload once and calls
// Report.
func Measure(b *testing.B, workload string) float64 {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^"+regexp.QuoteMeta(b.Name())+"$", "-test.benchtime=1x")
	cmd.Env = append(os.Environ(), envWorkload+"="+workload)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		b.Fatalf("workload %s: %v\n%s%s", workload, err, out.String(), errOut.String())
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), marker); ok {
			kib, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatalf("workload %s: bad report %q", workload, sc.Text())
			}
			return float64(kib) / 1024
		}
	}
	b.Fatalf("workload %s reported no peak RSS:\n%s%s", workload, out.String(), errOut.String())
	return 0
}

// Compare is a benchmark's parent side: it measures the reference workload
// and the worst workload b.N times each, alternating (reference, worst,
// reference, …), each in a fresh process, so both see the same machine;
// it reports both highest peaks and their ratio, and fails the benchmark
// when the worst workload reaches limitMiB. what names the workload in the
// failure.
func Compare(b *testing.B, ref, worst string, limitMiB float64, what string) {
	b.Helper()
	var base, peak float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		base = max(base, Measure(b, ref))
		b.StartTimer()
		peak = max(peak, Measure(b, worst))
	}
	b.StopTimer()
	b.ReportMetric(peak, "peak-RSS-MiB")
	b.ReportMetric(base, "ref-RSS-MiB")
	b.ReportMetric(peak/base, "x-"+ref)
	if peak >= limitMiB {
		b.Fatalf("%s peaked at %.0f MiB RSS, limit %.0f MiB", what, peak, limitMiB)
	}
}
