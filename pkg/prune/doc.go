// Package prune is the `prune` stage: it deletes from kiln's own
// repositories the node images kiln built that nothing needs any more,
// with their fingerprint tags and cosign signature and attestation
// artifacts. What stays is decided by pkg/retention from the cluster
// (pools, rendered configs, MachineConfigNodes, kiln's MachineConfigs)
// and kiln's verified attestations; by default nothing is deleted and the
// plan is printed (--apply deletes). Right before each delete the cluster
// is read again, so an image that became needed meanwhile (a rollback
// started, a run reuses it) stays.
//
// Deleting a manifest frees no disk until the registry garbage-collects
// (docker-registry: `registry garbage-collect`,
// https://distribution.github.io/distribution/about/garbage-collection/);
// the bytes printed are what that collection reclaims.
package prune
