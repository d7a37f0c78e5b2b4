//go:build tools

// Package tools pins the Tekton Pipelines commands that hack/tools.sh builds
// for the real-Tekton e2e: the controller runs as a process next to the
// test's kubelet; the others become the images its pods run.
package tools

import (
	_ "github.com/tektoncd/pipeline/cmd/controller"
	_ "github.com/tektoncd/pipeline/cmd/entrypoint"
	_ "github.com/tektoncd/pipeline/cmd/nop"
	_ "github.com/tektoncd/pipeline/cmd/sidecarlogresults"
	_ "github.com/tektoncd/pipeline/cmd/workingdirinit"
)
