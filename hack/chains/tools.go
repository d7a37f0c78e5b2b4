//go:build tools

// Package tools pins the Tekton Chains controller that hack/tools.sh builds
// for the real-Tekton e2e, where it signs and attests kiln's images.
package tools

import (
	_ "github.com/tektoncd/chains/cmd/controller"
)
