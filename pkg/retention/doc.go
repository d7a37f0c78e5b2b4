// Package retention decides which of kiln's registry objects a prune may
// delete. The keep set is a pure function of what the cluster says a node,
// a rollback or an upgrade may need (pools' rendered configs,
// MachineConfigNodes, kiln's MachineConfigs, the last N rendered configs
// per pool, live runs) and of what kiln's verified attestations say each
// kept image was built from. Ownership is proven per candidate: kiln's
// repository, kiln's signature and attestation, and a kiln-<fingerprint>
// tag equal to the attested inputs' fingerprint. Nothing here talks to a
// registry or a cluster; the prune stage gathers the inputs.
//
// MCO's on-cluster layering leaves pruning to the admin
// (https://docs.openshift.com/container-platform/4.16/machine_configuration/mco-coreos-layering.html);
// kiln attested every image it pushed, so it can tell what is still needed.
package retention
