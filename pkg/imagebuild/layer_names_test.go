package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	igntypes "github.com/coreos/ignition/v2/config/v3_5/types"

	"github.com/kiln-dev/kiln/pkg/nodeimport"
	"github.com/kiln-dev/kiln/test/imagetest"
)

// TestPlanTarWritesNoPAXPathRecords: names USTAR cannot hold (over 100
// bytes without a split, non-ASCII) are written as GNU long names, never
// as the PAX path record some nodes' import applies after the etc to
// usr/etc move; the node check then finds them under /usr/etc.
func TestPlanTarWritesNoPAXPathRecords(t *testing.T) {
	long := "/etc/" + strings.Repeat("n", 120)
	names := []string{long, "/etc/café.conf", "/etc/short.conf", "/etc/" + strings.Repeat("d", 60) + "/" + strings.Repeat("f", 60)}
	var files []igntypes.File
	for _, n := range names {
		files = append(files, imagetest.File(t, n, "x\n", 0o644, false))
	}
	plan, err := PlanLayer(imagetest.RenderedMC(t, "rendered-worker-names", igntypes.Config{Storage: igntypes.Storage{Files: files}}))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := plan.Tar()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(layer))
	seen := map[string]tar.Format{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := h.PAXRecords["path"]; ok {
			t.Errorf("%s carries a PAX path record", h.Name)
		}
		if _, ok := h.PAXRecords["linkpath"]; ok {
			t.Errorf("%s carries a PAX linkpath record", h.Name)
		}
		seen["/"+strings.TrimSuffix(h.Name, "/")] = h.Format
	}
	for _, n := range names {
		if _, ok := seen[n]; !ok {
			t.Errorf("%s is not in the layer (saw %v)", n, seen)
		}
	}
	if seen[long] != tar.FormatGNU || seen["/etc/café.conf"] != tar.FormatGNU {
		t.Errorf("long and non-ASCII names: formats %v and %v, want GNU", seen[long], seen["/etc/café.conf"])
	}
	if seen["/etc/short.conf"] == tar.FormatGNU {
		t.Errorf("a short ASCII name is written as GNU; the layer's bytes changed for no reason")
	}
	base := tarEntries(t, []tarEntry{{name: "usr/lib/modules/k/vmlinuz", body: "k"}})
	tree, fs, err := nodeimport.ImportTars([]func() (io.ReadCloser, error){opener(base), opener(layer)}, nodeimport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if errs := nodeimport.Errors(fs); len(errs) > 0 {
		t.Errorf("node check errors: %v", errs)
	}
	for _, n := range names {
		if _, ok := tree.Entries["/usr"+n]; !ok {
			t.Errorf("%s is not committed at /usr%s", n, n)
		}
	}
}
