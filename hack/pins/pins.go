//go:build pins

// Package pins keeps the libraries kiln pins in go.mod before the
// stages that use them land, so that `go mod tidy` does not drop them and
// every stage builds on the set checked to resolve together. Each import
// leaves this file when a stage imports it for real; openshift/client-go
// is the last one (the trigger controller's informers will use it).
package pins

import (
	_ "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
)
