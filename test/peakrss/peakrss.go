// Package peakrss measures the peak resident memory of one workload in a
// fresh process: the benchmark re-runs its own test binary for just that
// benchmark, the child runs the workload once and reports its maxrss
// (getrusage), and the parent reports it. A fresh process is the honest
// measure: the parent's heap, earlier benchmarks and the Go runtime's
// habit of keeping freed memory do not count, and everything the workload
// touched does.
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
	"syscall"
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
// calls it after the workload.
func Report() {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		fmt.Printf("peakrss: getrusage: %v\n", err)
		return
	}
	// Linux reports ru_maxrss in KiB.
	fmt.Printf("\n%s%d\n", marker, ru.Maxrss)
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
