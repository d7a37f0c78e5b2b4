//go:build tools

// Package tools pins the Tekton Triggers commands that hack/tools.sh builds
// for the real-Tekton e2e: the controller runs as a process; the
// eventlistenersink becomes the image of the EventListener's pod.
package tools

import (
	_ "github.com/tektoncd/triggers/cmd/controller"
	_ "github.com/tektoncd/triggers/cmd/eventlistenersink"
)
