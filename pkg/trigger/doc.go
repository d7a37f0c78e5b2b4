// Package trigger is kiln's front door: a controller that starts exactly
// one right PipelineRun per affected MachineConfigPool (docs/trigger.md).
//
// Per pool it computes a fingerprint of what the pool's image is made of:
// the specs of the MachineConfigs the pool selects (kiln's own
// kiln.dev/managed MC left out, or a rollout would trigger itself), the
// payload's base and extensions images by digest, the pool's ModuleDay0
// spec, the node-image Pipeline's app.kubernetes.io/version, and the
// pool's kiln.dev/rebuild annotation (a GitOps "rebuild now"). The run is
// labelled with the fingerprint and found by it on a live list, so restarts
// and stale caches cannot duplicate a run. It is named
// kiln-<pool>-<trigger>-<fp[:10]>, where the trigger follows from the same
// live list and fingerprint: two replicas racing before leader election
// settles compute the same name, and the second create fails with
// AlreadyExists.
//
// The rules, all in decide (a pure function with a table test):
//   - a fingerprint that has a run makes nothing, whatever that run's
//     outcome (a failed run is retried by changing kiln.dev/rebuild);
//   - a new fingerprint cancels the pool's run that has not reached
//     rollout (CancelledRunFinally, so report still runs) and starts;
//   - a run in rollout (or bootimages) finishes; the new run is created
//     PipelineRunPending and started when it ends; a newer fingerprint
//     replaces the queued one;
//   - a fingerprint whose run the trigger cancelled, or that a later run's
//     rollout overtook, runs again when the inputs return to it (an edit
//     and its undo): the old run is deleted and made anew.
//
// Bursts coalesce in memory (settler): a pool's run is made once its
// inputs were quiet for --settle (2s), or --max-settle (30s) after the
// burst began. PipelineRuns are listed live, not from the cache, so a
// decision never rests on a run the cache has not seen.
//
// Pools opt in with kiln.dev/enabled=true. Without it, unstarted runs are
// cancelled and, once no run is in rollout, 99-kiln-<pool>-os-image is
// deleted so MCO renders the pool back to the payload's OS: the CoreOS layering enhancement's
// "Reverting to Standard OS" (https://github.com/openshift/enhancements/blob/master/enhancements/ocp-coreos-layering/ocp-coreos-layering.md), which it gives as a command on a
// custom-build object and kiln does through the opt-in label. Pools may
// carry kiln.dev/wave=N: a pool starts a run only when every enabled pool
// of a lower wave has a succeeded run on the same payload. Both labels are
// read by PoolLabels in cluster and directory mode alike: a value other than
// "true"/"false", or a wave that is not a non-negative integer, is an
// InvalidInputs error naming the pool and the label, and nothing is done
// for that pool (no run, no revert).
//
// A change of coreos-bootimages (or MachineConfiguration's
// managedBootImages) alone starts the standalone bootimages Pipeline. When
// an upgrade changes the OS image too, the boot-image pools' node-image
// runs carry the stream's digest (kiln.dev/bootimages) and end with the
// bootimages stage, and no standalone run is made. A stream change is taken
// as alone only after --max-settle, since the CVO writes the OS image
// ConfigMap separately and often after it.
//
// The same manager runs pkg/kmod's ModuleDay0 sync (the KMM day-0 proposal). Its
// upgrade rule (clusterUpgradeTriggerNodeUpgrade) is checked when a run is
// made: a y-stream gap between ClusterVersion and the pool's nodes adds
// kmod-rebuild=true, so kmod-build rebuilds an image that exists. It is
// not part of the fingerprint: the gap closes as the rollout proceeds, and
// a fingerprint that flips back would start a second run.
//
// Upgrade-ahead runs (ahead.go) prepare a pool's next node image for a
// release the ClusterVersion offers, with no rollout. Each builds on its
// target's payload, not the running one's: the trigger reads the target's
// release image (payload.ReleaseFacts, through the cluster's mirrors) for
// its rhel-coreos, rhel-coreos-extensions and driver-toolkit images by
// digest and passes them as the os-image, extensions-image and dtk-image
// params. A target whose release image cannot be read, or names no
// driver-toolkit, gets no run: the ClusterVersion gets UpgradeNotReady
// with the cause and kiln_upgrade_ready is 0, and the pool's own runs go
// on as before.
//
// Every run also reaches registries as the cluster's nodes do
// (registries.go): the trigger copies openshift-config/pull-secret and
// renders the mirror sets, the image config and its trusted CAs into its
// own namespace, binds them as the registry-auth and registries
// workspaces, and sets the cluster proxy's env. They are not inputs: a
// change rebuilds nothing, and the next run (or the running run's next
// Task) uses it. kiln-config's own bindings and env win.
//
// MCO has no such controller; its on-cluster layering (MachineOSConfig)
// builds one image per pool on every rendered-config change. kiln keys on
// inputs instead of the rendered name, so a payload change or a ModuleDay0
// change with the same rendered config still rebuilds.
package trigger
