package modsign

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	kmmv1beta1 "github.com/kiln-dev/kiln/pkg/apis/kmm/v1beta1"
)

// KernelVersionVar is the placeholder the day-0 proposal allows in filesToSign.
const KernelVersionVar = kmmv1beta1.KernelVersionVar

// ExpandFilesToSign resolves a ModuleDay0's spec.osMapping.sign.filesToSign
// against an image filesystem: ${KERNEL_FULL_VERSION} is substituted, then
// each entry is a glob (path.Match syntax; KMM users ask for globs,
// KMM#1187). The result is sorted and free of duplicates. An empty list, or
// an entry matching no regular file, is an error naming the field and the
// entry: signing fewer modules than asked would leave the node unable to
// load the rest under Secure Boot, and signing none would push a "signed"
// image in which nothing is signed.
func ExpandFilesToSign(fsys fs.FS, patterns []string, kernelFullVersion string) ([]string, error) {
	if err := kmmv1beta1.ValidateFilesToSign(patterns); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for i, p := range patterns {
		expanded := strings.ReplaceAll(p, KernelVersionVar, kernelFullVersion)
		matches, err := fs.Glob(fsys, strings.TrimPrefix(path.Clean(expanded), "/"))
		if err != nil {
			return nil, fmt.Errorf("%s[%d] %q: %w", kmmv1beta1.FilesToSignField, i, p, err)
		}
		regular := matches[:0]
		for _, m := range matches {
			if info, err := fs.Stat(fsys, m); err == nil && info.Mode().IsRegular() {
				regular = append(regular, m)
			}
		}
		if len(regular) == 0 {
			return nil, fmt.Errorf("%s[%d] %q: matches no file in the image (as %q)", kmmv1beta1.FilesToSignField, i, p, expanded)
		}
		for _, m := range regular {
			if abs := "/" + m; !seen[abs] {
				seen[abs] = true
				files = append(files, abs)
			}
		}
	}
	sort.Strings(files)
	return files, nil
}
