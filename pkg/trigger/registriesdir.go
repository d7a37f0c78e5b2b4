package trigger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kiln-dev/kiln/pkg/registry"
)

// maxConfigMapBytes is the apiserver's limit on a ConfigMap's data.
const maxConfigMapBytes = 1 << 20

// folderData is a registries folder as ConfigMap content: the files by
// key, and the items that mount the keys back as the same tree.
type folderData struct {
	Data   map[string]string
	Binary map[string][]byte
	Items  []corev1.KeyToPath
}

// configMapFromConfig renders cfg the way a step reads it: whatever
// registry.Config.WriteDir writes (registries.conf, certs.d/<host>/ca.crt
// today) lands in the ConfigMap, so the trigger never has to know the
// folder's layout.
func configMapFromConfig(cfg *registry.Config) (folderData, error) {
	dir, err := os.MkdirTemp("", "kiln-registries-")
	if err != nil {
		return folderData{}, fmt.Errorf("making a folder for the registries config: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := cfg.WriteDir(dir); err != nil {
		return folderData{}, fmt.Errorf("writing the registries folder: %w", err)
	}
	return readFolder(dir)
}

// readFolder reads a folder into ConfigMap data. A ConfigMap key may not
// hold '/', so a file's key is its path with '/' as '_' and ':' as '..'
// (the host..port spelling OpenShift uses for additionalTrustedCA keys;
// see folderKey); the items put each key back at its path. Keys are only
// names: a step sees the tree. Text files go to data, others to
// binaryData.
func readFolder(dir string) (folderData, error) {
	out := folderData{Data: map[string]string{}, Binary: map[string][]byte{}}
	owner := map[string]string{} // key -> path, to refuse two paths sharing a key
	size := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			return fmt.Errorf("registries folder: %s is not a regular file", rel)
		}
		key := folderKey(rel)
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("registries folder: %s gives ConfigMap key %q: %s", rel, key, strings.Join(errs, "; "))
		}
		if prev, ok := owner[key]; ok {
			return fmt.Errorf("registries folder: %s and %s give the same ConfigMap key %q", prev, rel, key)
		}
		owner[key] = rel
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("reading the registries folder: %w", err)
		}
		if size += len(key) + len(b); size > maxConfigMapBytes {
			return fmt.Errorf("registries folder: more than %d bytes, the most a ConfigMap holds (at %s)", maxConfigMapBytes, rel)
		}
		if utf8.Valid(b) {
			out.Data[key] = string(b)
		} else {
			out.Binary[key] = b
		}
		out.Items = append(out.Items, corev1.KeyToPath{Key: key, Path: rel})
		return nil
	})
	if err != nil {
		return folderData{}, err
	}
	return out, nil
}

// folderKey is rel spelled as a ConfigMap key, or, when rel holds other
// characters no key may (an IPv6 host's brackets), a digest of it.
func folderKey(rel string) string {
	k := strings.NewReplacer("/", "_", ":", "..").Replace(rel)
	if len(validation.IsConfigMapKey(k)) == 0 {
		return k
	}
	sum := sha256.Sum256([]byte(rel))
	return "file-" + hex.EncodeToString(sum[:10])
}
