package retention

// Manifest is one manifest's blobs as the registry stores them.
type Manifest struct {
	Digest string
	// Blobs maps each blob the registry stores for the manifest to its
	// size: the manifest itself, its config and its layers.
	Blobs map[string]int64
}

// Freed is the bytes a garbage collection reclaims once deleted are gone:
// the unique blobs (manifests, configs, layers) of deleted that no kept
// manifest references. A layer a kept image shares (the base image's) is
// not freed.
func Freed(deleted, kept []Manifest) int64 {
	inUse := map[string]bool{}
	for _, m := range kept {
		inUse[m.Digest] = true
		for b := range m.Blobs {
			inUse[b] = true
		}
	}
	counted := map[string]bool{}
	var n int64
	for _, m := range deleted {
		for b, size := range m.Blobs {
			if !inUse[b] && !counted[b] {
				counted[b] = true
				n += size
			}
		}
	}
	return n
}
