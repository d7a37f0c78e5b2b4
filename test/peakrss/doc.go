// Package peakrss measures the peak resident memory of one workload in a
// fresh process: the benchmark re-runs its own test binary for just that
// benchmark, the child runs the workload once and reports its peak
// RSS (VmHWM), and the parent reports it. A fresh process is the honest
// measure: the parent's heap, earlier benchmarks and the Go runtime's
// habit of keeping freed memory do not count, and everything the workload
// touched does.
package peakrss
