// Package nodecache keeps the node import state of base images on local
// disk, so that the node import check (pkg/nodeimport) of an image built
// on a base it has seen reads only the layers above that base.
//
// It works like Go's build cache (https://pkg.go.dev/cmd/go#hdr-Build_and_test_caching):
// an entry is derived data, stored under a key that is the sha256 of
// everything it was derived from (nodeimport.RulesVersion, the entry
// format, the import options and the ordered digests and diffIDs of the
// base's layers), and computed only from layer reads whose content was
// checked against those digests. Every entry repeats its key, format and
// rules version; one that differs, is damaged or is not a regular file
// of the cache folder is ignored and rewritten. A cache that cannot be
// read or written costs time, never a build: the import then reads the
// whole image, as without a cache, and says why on the warnings writer.
package nodecache
