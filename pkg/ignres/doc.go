// Package ignres reads the bytes of an Ignition resource (file contents, a
// file append, a config merge/replace reference, a TLS CA) the way
// Ignition's fetcher does on the node, and within bounds Ignition does not
// have.
//
// Ignition (internal/resource/url.go, decompressCopyHashAndVerify) first
// decompresses the fetched bytes as `compression` says, then hashes what
// comes out: `verification.hash` covers the decompressed content, for data:
// URLs as for remote ones. Config references are fetched the same way and
// checked with util.AssertValid over the decompressed bytes
// (internal/exec/config_fetcher.go). Expected sums are hex-decoded before
// the comparison, so upper-case hex matches as well.
//
// Ignition sets no size limit. kiln does, because render and image-build
// hold what they read in memory and a few bytes of gzip inflate a thousand
// times: MaxReferencedConfig for a referenced config (it is merged into the
// rendered config, which MCO caps at that size), MaxContent for everything
// one rendered config's files, appends and CAs hold once decompressed.
// Reading stops at the limit: a bomb is refused after inflating at most
// limit+1 bytes.
package ignres
