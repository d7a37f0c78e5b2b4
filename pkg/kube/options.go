package kube

import (
	"strings"

	"github.com/kiln-dev/kiln/pkg/exitcode"
)

// KubeOptions say where cluster objects come from.
type KubeOptions struct {
	// Kubeconfig is a kubeconfig path; empty means controller-runtime's
	// order: $KUBECONFIG, in-cluster, ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context to use; empty means its
	// current-context.
	Context string
	// Source is "cluster" or "dir:PATH" (a directory of manifests).
	Source string
}

// SourceCluster is the default source: the cluster's API.
const SourceCluster = "cluster"

// DefaultKubeOptions returns the kube options with their defaults.
func DefaultKubeOptions() KubeOptions { return KubeOptions{Source: SourceCluster} }

// Validate reports a malformed --source.
func (o *KubeOptions) Validate() error {
	_, err := o.SourceDir()
	return err
}

// SourceDir returns the manifest directory of a dir: source, or "" for the cluster.
func (o *KubeOptions) SourceDir() (string, error) {
	switch {
	case o.Source == "cluster":
		return "", nil
	case strings.HasPrefix(o.Source, "dir:") && len(o.Source) > len("dir:"):
		return strings.TrimPrefix(o.Source, "dir:"), nil
	default:
		return "", exitcode.UsageErrorf(`--source %q: want "cluster" or "dir:PATH"`, o.Source)
	}
}
