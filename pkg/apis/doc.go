// Package apis assembles the scheme kiln's clients use: Kubernetes core,
// the OpenShift APIs kiln reads and writes, Tekton v1, ModuleDay0 and
// BootImageHistory.
package apis
