package prune

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// PrintPlan writes what the prune keeps and why, what it deletes, and the
// bytes a garbage collection would free. Names and reasons come from the
// registry and the cluster, so control characters are escaped.
func PrintPlan(w io.Writer, p *Plan) {
	fmt.Fprintf(w, "keep set: %d digests\n", len(p.Keep))
	for _, d := range p.Keep.Digests() {
		fmt.Fprintf(w, "  keep %s: %s\n", d, termsafe.Escape(strings.Join(p.Keep[d], "; ")))
	}
	var del, stay []string
	for _, d := range p.Decisions {
		line := fmt.Sprintf("%s@%s (%s): %s", d.Repo, d.Digest, strings.Join(d.Tags, ", "), d.Reason)
		if d.Delete {
			del = append(del, line)
		} else {
			stay = append(stay, line)
		}
	}
	for _, l := range stay {
		fmt.Fprintf(w, "  stays  %s\n", termsafe.Escape(l))
	}
	for _, l := range del {
		fmt.Fprintf(w, "  delete %s\n", termsafe.Escape(l))
	}
	for _, o := range p.Orphans {
		fmt.Fprintf(w, "  delete %s@%s's artifacts (%s): left by an earlier prune\n", o.Repo, o.Subject, termsafe.Escape(strings.Join(o.Tags, ", ")))
	}
	fmt.Fprintf(w, "%d images and %d orphaned artifact sets to delete; %d bytes freed after the registry's garbage collection\n",
		len(del), len(p.Orphans), p.FreedBytes)
}

// PrintOutcome writes what Apply did.
func PrintOutcome(w io.Writer, o *Outcome) {
	fmt.Fprintf(w, "deleted %d\n", len(o.Deleted))
	spared := make([]string, 0, len(o.Spared))
	for ref := range o.Spared {
		spared = append(spared, ref)
	}
	slices.Sort(spared)
	for _, ref := range spared {
		fmt.Fprintf(w, "  kept %s: needed since the plan: %s\n", ref, termsafe.Escape(o.Spared[ref]))
	}
}
