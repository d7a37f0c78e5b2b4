// Package safepath writes files whose paths are derived from outside input
// (an object's name, a pool's) only inside the folder they belong to. The
// check fails closed: a path that is absolute, climbs out with "..", or
// resolves outside through a symlink is an error, never a write. It rests
// on os.Root (https://pkg.go.dev/os#Root), which resolves every component
// inside the root, symlinks included, so a check and a write cannot
// disagree.
package safepath
