package kmod

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// KernelVersionVar is the placeholder seed 003 allows in filesToSign.
const KernelVersionVar = "${KERNEL_FULL_VERSION}"

// ExpandFilesToSign resolves a ModuleDay0's sign.filesToSign against an
// image filesystem: ${KERNEL_FULL_VERSION} is substituted, then each entry
// is a glob (path.Match syntax; KMM users ask for globs, KMM#1187). The
// result is sorted and free of duplicates. An entry matching nothing is an
// error naming it: signing fewer modules than asked would leave the node
// unable to load the rest under Secure Boot.
func ExpandFilesToSign(fsys fs.FS, patterns []string, kernelFullVersion string) ([]string, error) {
	seen := map[string]bool{}
	var files []string
	for i, p := range patterns {
		if !strings.HasPrefix(p, "/") {
			return nil, fmt.Errorf("expanding sign.filesToSign[%d] %q: not an absolute path", i, p)
		}
		expanded := strings.ReplaceAll(p, KernelVersionVar, kernelFullVersion)
		if strings.Contains(expanded, "${") {
			return nil, fmt.Errorf("expanding sign.filesToSign[%d] %q: only %s may be substituted", i, p, KernelVersionVar)
		}
		matches, err := fs.Glob(fsys, strings.TrimPrefix(path.Clean(expanded), "/"))
		if err != nil {
			return nil, fmt.Errorf("expanding sign.filesToSign[%d] %q: %w", i, p, err)
		}
		regular := matches[:0]
		for _, m := range matches {
			if info, err := fs.Stat(fsys, m); err == nil && info.Mode().IsRegular() {
				regular = append(regular, m)
			}
		}
		if len(regular) == 0 {
			return nil, fmt.Errorf("expanding sign.filesToSign[%d] %q: matches no file in the image (as %q)", i, p, expanded)
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
