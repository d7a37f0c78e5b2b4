package nodesim

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
)

// verdict is what a node makes of an image, in terms both real ostree and
// kiln's import model can state: whether the import or deployment fails,
// which kernels the deployment holds, which image entries the import
// leaves out (counted by top-level folder, or by the name under an
// emptied API folder, as View.Dropped counts them) and what the node has
// at each asked path.
type verdict struct {
	Fails   bool
	Kernels []string
	Dropped map[string]int
	Files   map[string]string
}

// importRules are the model's rules whose error means ostree-ext or
// ostree refuses the layer or the deployment on every node.
var importRules = []string{nodeimport.RulePath, nodeimport.RuleUTF8, nodeimport.RuleFileType,
	nodeimport.RuleHardlink, nodeimport.RuleNameLength, nodeimport.RuleOwner}

// TestImportModelAgreesWithOstree puts every image of
// TestHostileImagesOnNode through pkg/nodeimport and through real ostree
// and compares the two verdicts: the model finds an import error exactly
// where ostree fails (a PAX path record under /etc only on a node that
// lets it bypass the etc move), lists the kernels the deployment holds
// (and flags more than one), drops what the import drops, and says what
// the node has at each asked path.
func TestImportModelAgreesWithOstree(t *testing.T) {
	base := mustBase(t)
	baseTree, _, err := nodeimport.Import(base, nodeimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[Options]*Node{}
	for _, tc := range hostileCases() {
		n := nodes[tc.opts]
		if n == nil {
			n = New(t, tc.opts)
			if _, err := n.Deploy(base); err != nil {
				t.Fatal(err)
			}
			nodes[tc.opts] = n
		}
		t.Run(tc.name, func(t *testing.T) {
			img := derived(t, base, tc.layer(t))
			model := modelVerdict(t, img, baseTree, tc)
			fromOstree := ostreeVerdict(t, n, img, tc.ask)
			if d := cmp.Diff(fromOstree, model, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("pkg/nodeimport's verdict differs from real ostree's (-ostree +model):\n%s", d)
			}
		})
	}
}

func ostreeVerdict(t *testing.T, n *Node, img v1.Image, ask []string) verdict {
	v, err := n.Upgrade(img)
	if err != nil {
		t.Logf("ostree: %v", err)
		return verdict{Fails: true}
	}
	got := verdict{Dropped: v.Dropped, Files: map[string]string{}}
	for _, p := range v.Paths("/usr/lib/modules") {
		if path.Base(p) == "vmlinuz" && path.Dir(path.Dir(p)) == "/usr/lib/modules" {
			got.Kernels = append(got.Kernels, path.Base(path.Dir(p)))
		}
	}
	if !slices.Contains(got.Kernels, v.Kernel) {
		t.Errorf("ostree booted %q, not one of the deployment's kernels %v", v.Kernel, got.Kernels)
	}
	for _, p := range ask {
		f, ok := v.File(p)
		got.Files[p] = short(f, ok)
	}
	return got
}

func modelVerdict(t *testing.T, img v1.Image, baseTree *nodeimport.Tree, tc hostileCase) verdict {
	opts := nodeimport.Options{FactoryVar: tc.opts.FactoryVar, NonUsr: nodeimport.NonUsrDrop}
	if tc.opts.TransientRoot {
		opts.NonUsr = nodeimport.NonUsrKeep
	}
	tree, findings, err := nodeimport.Import(img, opts)
	if err != nil {
		t.Fatal(err)
	}
	rules := slices.Clone(importRules)
	if tc.opts.PAXPathBypassesEtc {
		rules = append(rules, nodeimport.RulePAXPathEtc)
	}
	got := verdict{Files: map[string]string{}}
	for _, f := range nodeimport.Errors(findings) {
		if slices.Contains(rules, f.Rule) {
			t.Logf("model: %s", f)
			got.Fails = true
		}
	}
	if got.Fails {
		return got
	}
	got.Kernels = kernels(tree)
	if hasRule(findings, nodeimport.RuleKernel) != (len(got.Kernels) != 1) {
		t.Errorf("model: kernels %v, but the kernel lint says %v", got.Kernels, findings)
	}
	for _, p := range tree.Omitted {
		if !dropped(tree, p) {
			continue
		}
		if got.Dropped == nil {
			got.Dropped = map[string]int{}
		}
		got.Dropped[droppedKey(p)]++
	}
	view := nodeimport.NodeView(tree, nodeimport.Node{Upgrade: true, Defaults: baseTree.Defaults(),
		Etc: baseTree.Defaults(), Var: baseVar(baseTree)})
	for _, p := range tc.ask {
		e, ok := view.Files[p]
		got.Files[p] = shortEntry(e, ok)
	}
	return got
}

// dropped says whether the model left out image path p from a layer above
// the base: the node simulation only counts the derived layers' entries.
func dropped(tree *nodeimport.Tree, p string) bool {
	e, ok := tree.Image[p]
	return !ok || e.Layer > 0
}

// droppedKey is View.Dropped's key for an image path.
func droppedKey(p string) string {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if slices.Contains([]string{"run", "tmp", "proc", "sys", "dev"}, parts[0]) && len(parts) > 1 {
		return parts[1]
	}
	return parts[0]
}

func kernels(tree *nodeimport.Tree) []string {
	var ks []string
	for _, p := range tree.Paths() {
		if path.Base(p) == "vmlinuz" && path.Dir(path.Dir(p)) == "/usr/lib/modules" {
			ks = append(ks, path.Base(path.Dir(p)))
		}
	}
	return ks
}

func hasRule(fs []nodeimport.Finding, rule string) bool {
	return slices.ContainsFunc(fs, func(f nodeimport.Finding) bool { return f.Rule == rule })
}

// baseVar is the /var a node that first-installed the base has.
func baseVar(t *nodeimport.Tree) map[string]nodeimport.Entry {
	out := map[string]nodeimport.Entry{}
	for p, e := range t.Entries {
		if p == "/var" || strings.HasPrefix(p, "/var/") {
			out[p] = e
		}
	}
	return out
}

// short and shortEntry state a node file the same way from both sides:
// absent, a symlink's target, or type and content digest.
func short(f File, ok bool) string {
	switch {
	case !ok:
		return "absent"
	case f.Type == tar.TypeSymlink:
		return "-> " + f.Link
	case f.Type == tar.TypeDir:
		return "dir"
	default:
		s := sha256.Sum256(f.Data)
		return "file sha256:" + hex.EncodeToString(s[:])
	}
}

func shortEntry(e nodeimport.Entry, ok bool) string {
	switch {
	case !ok:
		return "absent"
	case e.Type == nodeimport.Symlink:
		return "-> " + e.Link
	case e.Type == nodeimport.Dir:
		return "dir"
	default:
		return "file " + e.Digest
	}
}
