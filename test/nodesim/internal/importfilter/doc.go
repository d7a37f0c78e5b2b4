// Package importfilter stands in for what ostree-ext does to each layer
// of a derived image before `ostree commit --tree=tar=` sees it; package
// nodesim runs real ostree on its output.
package importfilter
