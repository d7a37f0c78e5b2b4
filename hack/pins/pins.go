//go:build pins

// Package pins keeps the libraries DESIGN §8 pins in go.mod before the
// stages that use them land, so that `go mod tidy` does not drop them and
// every stage builds on the set checked to resolve together. Each import
// leaves this file when a stage imports it for real.
package pins

import (
	_ "github.com/coreos/ign-converter/translate/v23tov30"
	_ "github.com/coreos/ignition/v2/config/v3_5"
	_ "github.com/coreos/stream-metadata-go/stream"
	_ "github.com/openshift/client-go/machineconfiguration/clientset/versioned"
	_ "github.com/sigstore/cosign/v2/pkg/cosign"
	_ "go.podman.io/image/v5/signature"
)
