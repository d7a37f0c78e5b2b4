// Package mcrender renders MachineConfigs the way the Machine Config
// Operator does: a pool's MachineConfigs exactly as MCO renders them
// (MCO's docs/MachineConfiguration.md,
// https://github.com/openshift/machine-config-operator/blob/master/docs/MachineConfiguration.md):
// selection by machineConfigSelector, worker-role MCs first then the rest (each by name), Ignition 3.5
// parse-and-convert (spec 2 through MCO's duplicate removal and
// ign-converter), Ignition's merge with MCO's compression and overwrite
// quirks, kernelArguments/fips/kernelType/extensions, the osImageURL and
// extensions-image overrides, and the rendered-<pool>-<md5> name over MCO's
// salt and the YAML of the merged spec. The merged config is encoded with
// github.com/clarketm/json, as MCO does, so the names match.
//
// The 1.5 MiB limit (MaxConfigSize, etcd's request size) is measured on
// exactly the bytes MCO measures (size.go): clarketm/json of the
// MachineConfig MCO's render controller would create — no kind, no labels,
// the pool as controller owner, MCO's annotations — not on kiln's own
// object. Over the limit fails, at the limit passes, as in MCO. MCO's
// controller version is read from the generated input MCs; without them,
// and for a pool without a UID (manifests), values of the same length
// stand in.
//
// Where kiln differs from MCO, on purpose:
//   - An empty or absent machineConfigSelector is an error (MCO emits a
//     SelectingAll event and renders nothing).
//   - MCs labelled kiln.dev/managed=true are left out (kiln's own osImageURL
//     MC; otherwise a rollout would trigger a render of itself).
//   - Extensions are checked against the allowlist for every MC; MCO skips
//     the check for an MC without an Ignition config
//     (TestDeliberateDifferencesFromMCO).
//   - Remote sources (Request.Sources, which the render stage, pkg/render,
//     implements): http(s) file contents, file appends and TLS
//     CAs are fetched, checked against verification.hash and embedded as
//     data: URLs (gzip when smaller, compression set, httpHeaders dropped;
//     verification.hash kept, as it covers the decompressed content, which
//     embedding does not change); remote merge/replace config references
//     are fetched and merged in place as Ignition's engine would. data:
//     config references stay, as in MCO. Other schemes (s3, gs, tftp, arn)
//     fail. MCO leaves remote sources to Ignition at first boot.
//   - verification.hash is checked at render time (by the same Sources),
//     where MCO checks nothing
//     (MCO neither fetches nor verifies; the node's Ignition does, and a
//     mismatch there stops the boot). kiln checks exactly what Ignition
//     checks (pkg/ignres): the hash of the decompressed content when
//     compression is set, on data: URLs as on remote ones, for file
//     contents, appends, CAs and config references (kept data: ones too);
//     sha512 and sha256; for files and CAs the sum is hex-decoded (case does
//     not matter), for config references it is compared as lower-case hex
//     (Ignition's util.AssertValid). A mismatch fails render.
//   - Sizes are capped where Ignition has no cap, so a gzip bomb is refused
//     after inflating at most the limit: a referenced config may hold at
//     most 1,572,864 bytes decompressed (ignres.MaxReferencedConfig: it is
//     merged into the rendered config, which has that cap); all sources
//     render decompresses for one pool, and the decompressed files, appends
//     and CAs of the rendered config, at most 64 MiB each
//     (ignres.MaxContent, the same cap image-build applies). A fetch is at
//     most 16 MiB before decompression (Fetcher.MaxBytes), and ends by a
//     deadline per source (Fetcher.SourceDeadline, 60 s, all attempts
//     together) and per render (Fetcher.RenderDeadline, 5 min).
//   - The JSON of a config, an MC's own or a referenced one, nests at most
//     16 levels and holds at most 131,072 values (ignres.CheckShape),
//     checked before Ignition's parser, whose memory grows with every value,
//     sees it. Ignition and MCO set no such cap: a config beyond it that MCO
//     would accept with an "unused key" warning is refused.
//   - The reconcilability check against the pool's current rendered config
//     (spec.configuration.name, else status) names the input MC that sets
//     the offending section; MCO re-runs the check per input and matches the
//     message. It checks the merged config as merged; MCO re-parses it, which
//     fails on an append-only file (MCO sets overwrite=true on it). MCO's
//     irreconcilableValidationOverrides are not read.
//   - Where Ignition's merge is associative (no path that is a file in one
//     config and a directory or link in another, no kernel argument both in
//     shouldExist and shouldNotExist, no httpHeaders), configs are merged as
//     a balanced tree: the same result as MCO's left fold, without its
//     quadratic cost. Otherwise the left fold runs.
//   - The rendered config carries kiln.dev/pool and kiln.dev/inputs; it has
//     no generated-by-controller-version annotation (kiln is not the MCO
//     controller). Its size is still checked on MCO's object, so the object
//     kiln writes can be some hundred bytes larger or smaller than the one
//     measured (a long kiln.dev/inputs list). The owner reference to the pool is set only when the pool
//     has a UID (it has none in a directory of manifests).
//   - Render never contacts a container registry: osImageURL is recorded as
//     given, tag or digest (MCO warns about tags); pkg/payload resolves tags.
//
// Request.AsMCO turns the two differences that change the rendered name off
// (kiln's own MCs are selected, remote sources are not fetched): the drift
// gate's prediction (predict.go, Predict) and test/mcosim render
// that way, so the name kiln predicts is the name MCO gives. CompareRendered
// (diff.go) explains a name that differs anyway.
//
// mcrender is a library below the stages, and any package may import it:
// the render stage (pkg/render), image-sign's prediction hook, rollout's
// drift gate, report, pkg/trigger and the tests' MCO stand-in
// (test/mcosim) do. It imports no stage package (test/layout checks), so a
// stage that needs MCO's rendering does not depend on another stage.
package mcrender
