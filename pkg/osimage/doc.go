// Package osimage builds the layered OS image: layer planning from a
// rendered config, the reproducible layer-append builder, the buildah
// builder and the content-addressed skip.
//
// It lands with issue #4; DESIGN §2 and §5 define its contract.
package osimage
