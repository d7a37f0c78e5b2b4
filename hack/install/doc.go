// Command install (make install) writes a kustomize overlay of config/ with the
// images `make images` pushed pinned by digest (-out/kustomization.yaml),
// applies it with server-side apply to the cluster of $KUBECONFIG, prunes
// what the previous install applied and this one lacks, and gives runs of
// an older kiln today's labels (pkg/release).
//
//	go run ./hack/install -images _out/release/images.json [-registry quay.io/me]
package main
