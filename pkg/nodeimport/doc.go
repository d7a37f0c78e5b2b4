// Package nodeimport models what an rpm-ostree / bootc node does with a
// container image when it imports it, and lints the image the way
// `bootc container lint` does, so that kiln can refuse an image a node
// could not apply before it is pushed or signed.
//
// The import rules follow ostree-ext's container import
// (https://github.com/bootc-dev/bootc/blob/main/crates/ostree-ext/src/tar/write.rs
// and crates/ostree-ext/src/container/store.rs): every layer is read as a
// tar stream; paths must be UTF-8 and free of `..`; only regular files,
// directories, symlinks and hard links into the same layer are accepted;
// the first path component decides a file's fate (usr kept, etc moved to
// usr/etc, var kept or moved to usr/share/factory/var, the API folders
// emptied, anything else dropped unless the root is transient). The lints
// follow bootc's (https://github.com/bootc-dev/bootc/blob/main/crates/lib/src/lints.rs),
// each named by its Rule.
//
// Import answers "what does ostree commit from this image"; View answers
// "what does a node see after deploying that commit", on first install or
// on an upgrade from a node whose /etc and /var it is given.
package nodeimport
