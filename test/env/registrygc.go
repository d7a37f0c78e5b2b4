package env

import (
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
)

// GarbageCollect runs `docker-registry garbage-collect` on the registry's
// configuration: the blobs no manifest references any more are removed
// from its storage (https://distribution.github.io/distribution/about/garbage-collection/).
// Untagged manifests stay (no --delete-untagged), as in a default setup.
func (r *Registry) GarbageCollect() (string, error) {
	bin, err := LookTool("docker-registry")
	if err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "garbage-collect", filepath.Join(r.dir, "config.yml"))
	cmd.Env = registryEnv(cmd.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("docker-registry garbage-collect: %w: %s", err, out)
	}
	return string(out), nil
}

// BlobBytes is the size of every blob in the registry's storage (the data
// files under docker/registry/v2/blobs), what a garbage collection frees.
func (r *Registry) BlobBytes() (int64, error) {
	var n int64
	root := filepath.Join(r.dir, "data", "docker", "registry", "v2", "blobs")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || d.Name() != "data" {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}
