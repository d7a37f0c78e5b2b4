// Package install renders kiln's kustomize install (config/) the way
// `kubectl kustomize config/` does, applies it to a test cluster, and
// records the API requests a client makes, so that tests can hold the
// RBAC of config/rbac against what the steps (and the trigger) really call.
package install
