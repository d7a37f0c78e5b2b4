// Command pause is the sandbox ("infra") container of the test node's
// pods, written in Go for the same job as Kubernetes' pause.c: hold the
// pod's namespaces, reap orphaned children as PID 1, and exit on
// SIGTERM/SIGINT. Built and imported by test/env, so no image is pulled.
package main
