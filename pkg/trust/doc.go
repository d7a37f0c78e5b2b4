// Package trust is kiln's one definition of what it proves about what it
// builds: the inputs a build is made from and the identity whose signature
// turns a registry object into a fact.
//
// image-build, kmod-build and kmod-sign compute their Inputs here, record
// them in their stage report, and reuse a registry object only when an
// attestation signed by the configured Identity binds exactly those Inputs
// (pkg/sign.Prove). image-sign and the kmod stages attest the same
// Inputs, and the trigger's fingerprint includes the build formats, so what
// is attested, what is reused and what starts a run cannot drift apart.
//
// Nothing in this package reads a registry: tags, labels and annotations
// are claims anyone with push access can copy, so they appear nowhere in a
// reuse decision.
package trust
