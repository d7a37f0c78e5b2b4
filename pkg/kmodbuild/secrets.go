package kmodbuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxSecretBytes caps one build secret file: the apiserver refuses a Secret
// whose data exceed 1 MiB (corev1.MaxSecretSize), so nothing larger is a
// mounted Secret key.
const MaxSecretBytes = 1 << 20

// SecretFiles is the allow-list of a kmod build's secrets: for each Secret
// name in names (the ModuleDay0's spec.osMapping.build.secrets, or the names
// an attestation records), the buildah secret ids "<secret>_<key>" and the
// files that hold them, found under dir in either layout a Secret is
// mounted in: a folder per Secret (dir/<secret>/<key>, a Secret volume or a
// projected volume's items) or a file per id (dir/<secret>_<key>).
//
// Nothing else in dir reaches the build, and nothing outside it: every name
// must be a Secret name and every key a Secret key by the apiserver's own
// rules, and every file, once its symlinks are resolved (a Secret volume's
// keys are links into its ..data folder), must be a regular file inside
// that Secret's folder (or, for a file per id, inside dir) and at most
// MaxSecretBytes. A name such as "../cosign-key" or a link to a file beside
// the folder is refused, not followed.
func SecretFiles(dir string, names []string) (map[string]string, error) {
	out := map[string]string{}
	if len(names) == 0 {
		return out, nil
	}
	for i, n := range names {
		if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
			return nil, secretErr(i, n, fmt.Errorf("not a Secret name: %s", strings.Join(errs, "; ")))
		}
		if slices.Index(names, n) != i {
			return nil, secretErr(i, n, errors.New("named twice"))
		}
	}
	if dir == "" {
		return nil, fmt.Errorf("spec.osMapping.build.secrets %q: no build secrets are mounted (the build-secrets folder is not given)", names)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the build secrets folder: %w", err)
	}
	for i, n := range names {
		found, err := secretIDs(root, n, out)
		if err != nil {
			return nil, secretErr(i, n, err)
		}
		if found == 0 {
			return nil, secretErr(i, n, fmt.Errorf("not mounted: no folder %s/ and no file %s_<key> in %s", n, n, dir))
		}
	}
	return out, nil
}

func secretErr(i int, name string, err error) error {
	return fmt.Errorf("spec.osMapping.build.secrets[%d].name %q: %w", i, name, err)
}

// secretIDs adds the ids of Secret n found under root (symlinks resolved)
// to out and returns how many it found.
func secretIDs(root, n string, out map[string]string) (int, error) {
	found := 0
	folder := filepath.Join(root, n)
	if st, err := os.Lstat(folder); err == nil {
		real, err := contained(root, folder)
		if err != nil {
			return 0, err
		}
		if st, err = os.Stat(real); err != nil || !st.IsDir() {
			return 0, fmt.Errorf("%s is not a folder", folder)
		}
		entries, err := os.ReadDir(real)
		if err != nil {
			return 0, fmt.Errorf("reading %s: %w", folder, err)
		}
		for _, e := range entries {
			// A Secret volume holds ..data and a timestamped folder beside
			// its keys; a key never starts with two dots (IsConfigMapKey).
			if strings.HasPrefix(e.Name(), "..") {
				continue
			}
			p, err := secretFile(real, e.Name())
			if err != nil {
				return 0, err
			}
			out[n+"_"+e.Name()] = p
			found++
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("reading %s: %w", root, err)
	}
	for _, e := range entries {
		key, ok := strings.CutPrefix(e.Name(), n+"_")
		if !ok || e.IsDir() {
			continue
		}
		if _, dup := out[e.Name()]; dup {
			return 0, fmt.Errorf("id %s is both a file and %s/%s", e.Name(), n, key)
		}
		p, err := secretFile(root, e.Name())
		if err != nil {
			return 0, err
		}
		out[e.Name()] = p
		found++
	}
	return found, nil
}

// secretFile resolves the key file base in folder (symlinks followed) and
// returns it when it is a regular file inside folder, no larger than
// MaxSecretBytes, whose key is a Secret key by the apiserver's rule.
func secretFile(folder, base string) (string, error) {
	key := base
	if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
		return "", fmt.Errorf("key %q: %s", key, strings.Join(errs, "; "))
	}
	p, err := contained(folder, filepath.Join(folder, base))
	if err != nil {
		return "", err
	}
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return "", err
	case st.IsDir():
		return "", fmt.Errorf("key %q is a folder", key)
	case !st.Mode().IsRegular():
		return "", fmt.Errorf("key %q is not a regular file (%s)", key, st.Mode().Type())
	case st.Size() > MaxSecretBytes:
		return "", fmt.Errorf("key %q is %d bytes, over the %d a Secret may hold", key, st.Size(), MaxSecretBytes)
	}
	return p, nil
}

// contained resolves p's symlinks and fails unless the result is inside
// root (itself resolved): a link out of the Secret's folder is refused.
func contained(root, p string) (string, error) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s resolves to %s, outside %s", p, real, root)
	}
	return real, nil
}
