// Package kube is the one place a stage gets its Kubernetes client, for
// both sources a stage can read: the cluster's API (controller-runtime's
// client) or a folder of manifests (controller-runtime's fake client,
// loaded through pkg/manifests, whose writes become GitOps output files).
// A stage therefore has one code path for both modes.
//
// It is a library package below the stages: any stage and cmd/ may
// import it; it imports no stage package.
package kube
