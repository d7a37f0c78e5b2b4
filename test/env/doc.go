// Package env starts the real parts kiln's integration tests run against: a
// kube-apiserver and etcd with the OpenShift, Tekton and kiln CRDs, Debian's
// docker-registry, and a private buildah setup. Everything it starts is
// stopped by PID and its folders removed when the test ends. A missing tool
// fails the test with a message naming `make tools`; nothing is skipped.
package env
