package reproduce

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/kiln-dev/kiln/pkg/termsafe"
)

// Result is the outcome for one reproduced image.
type Result struct {
	// Image is the image under check, repository@sha256:….
	Image string `json:"image"`
	// Kind is the attested build: node-image, kmod-build or kmod-sign.
	Kind string `json:"kind"`
	// Rebuilt is the rebuild's digest.
	Rebuilt   string `json:"rebuilt"`
	Identical bool   `json:"identical"`
	// Reason says why an image is not reproducible when no rebuild
	// could be compared (its config is not the attested one).
	Reason string `json:"reason,omitempty"`
	// Diff is what differs; nil when identical.
	Diff *Diff `json:"diff,omitempty"`
}

// Report is every image one reproduce checked, the image asked for last
// (the images it was built on come first).
type Report struct {
	Reproduced bool     `json:"reproduced"`
	Images     []Result `json:"images"`
}

// add records r and keeps Reproduced true only while every image is.
func (rep *Report) add(r Result) {
	if len(rep.Images) == 0 {
		rep.Reproduced = true
	}
	rep.Images = append(rep.Images, r)
	rep.Reproduced = rep.Reproduced && r.Identical
}

// JSON is the report as indented JSON (--report-file, or -o json).
func (rep *Report) JSON() []byte {
	b, _ := json.MarshalIndent(rep, "", "  ")
	return append(b, '\n')
}

// Width is the text report's line width: every line but an image's
// reference and a very long path fits in it.
const Width = 100

// maxFilesShown bounds the files printed per layer; the JSON report has
// them all.
const maxFilesShown = 40

// WriteText prints the report: "identical IMAGE" per identical image,
// and for a different one the differing manifest and config fields, then
// each differing layer with its files, aligned.
//
// Every line is escaped (termsafe): file names, config fields and reasons
// come from the images' layers and the registry.
func (rep *Report) WriteText(w io.Writer) {
	var b strings.Builder
	rep.writeText(&b)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if body, ok := strings.CutSuffix(line, "\n"); ok {
			fmt.Fprintln(w, termsafe.Escape(body))
		} else if line != "" {
			fmt.Fprint(w, termsafe.Escape(line))
		}
	}
}

func (rep *Report) writeText(w io.Writer) {
	for _, r := range rep.Images {
		if r.Identical {
			fmt.Fprintf(w, "identical %s\n", r.Image)
			continue
		}
		fmt.Fprintf(w, "different %s\n", r.Image)
		for _, line := range wrap(r.Reason, Width-2) {
			fmt.Fprintf(w, "  %s\n", line)
		}
		if r.Rebuilt != "" {
			fmt.Fprintf(w, "  %s rebuilt: %s\n", r.Kind, r.Rebuilt)
		}
		if r.Diff != nil {
			writeDiff(w, *r.Diff, "  ")
		}
	}
}

func writeDiff(w io.Writer, d Diff, in string) {
	if d.Platform != "" {
		fmt.Fprintf(w, "%splatform %s\n", in, d.Platform)
		in += "  "
	}
	writeFields(w, "manifest", d.Manifest, in)
	writeFields(w, "config", d.Config, in)
	for _, l := range d.Layers {
		writeLayer(w, l, in)
	}
	for _, p := range d.Platforms {
		writeDiff(w, p, in)
	}
}

func writeFields(w io.Writer, what string, fs []FieldDiff, in string) {
	if len(fs) == 0 {
		return
	}
	fmt.Fprintf(w, "%s%s differs:\n", in, what)
	room := Width - len(in) - 16
	for _, f := range fs {
		fmt.Fprintf(w, "%s  %s\n", in, clip(f.Field, Width-len(in)-2))
		fmt.Fprintf(w, "%s    image    %s\n", in, clip(f.Image, room))
		fmt.Fprintf(w, "%s    rebuilt  %s\n", in, clip(f.Rebuilt, room))
	}
}

func writeLayer(w io.Writer, l LayerDiff, in string) {
	fmt.Fprintf(w, "%slayer %d differs:\n", in, l.Index)
	for _, side := range []struct {
		name string
		info *LayerInfo
	}{{"image", l.Image}, {"rebuilt", l.Rebuilt}} {
		if side.info == nil {
			fmt.Fprintf(w, "%s  %-8s (no layer)\n", in, side.name)
			continue
		}
		fmt.Fprintf(w, "%s  %-8s %s  %d bytes\n", in, side.name, short(side.info.Digest), side.info.Size)
	}
	if l.Note != "" {
		fmt.Fprintf(w, "%s  %s\n", in, l.Note)
	}
	if len(l.Files) == 0 {
		return
	}
	fin := in + "  "
	fmt.Fprintf(w, "%s%d files differ:\n", fin, len(l.Files))
	fmt.Fprintf(w, "%s  %-8s %10s  %-19s  %-10s  %-20s  %s\n", fin, "", "size", "sha256", "mode", "mtime", "uid:gid")
	for i, f := range l.Files {
		if i == maxFilesShown {
			fmt.Fprintf(w, "%s… %d more (the JSON report lists them all)\n", fin, len(l.Files)-i)
			break
		}
		line := fmt.Sprintf("%s  %s", f.Change, f.Path)
		if len(f.Differs) > 0 {
			line += " (" + strings.Join(f.Differs, ", ") + ")"
		}
		fmt.Fprintf(w, "%s%s\n", fin, clip(line, Width-len(fin)))
		writeFile(w, "image", f.Image, fin)
		writeFile(w, "rebuilt", f.Rebuilt, fin)
	}
}

func writeFile(w io.Writer, side string, f *FileInfo, in string) {
	if f == nil {
		return
	}
	sum := "-"
	if f.SHA256 != "" {
		sum = short(f.SHA256)
	}
	fmt.Fprintf(w, "%s  %-8s %10d  %-19s  %-10s  %-20s  %d:%d\n", in, side, f.Size, sum, modeString(f),
		f.Mtime.Format("2006-01-02T15:04:05Z"), f.UID, f.GID)
	if f.Link != "" {
		fmt.Fprintf(w, "%s  %-8s -> %s\n", in, "", clip(f.Link, Width-len(in)-14))
	}
	if len(f.Xattrs) > 0 {
		fmt.Fprintf(w, "%s  %-8s xattrs %s\n", in, "", clip(strings.Join(f.Xattrs, " "), Width-len(in)-18))
	}
}

// short is a digest cut to 12 hex digits for the text report.
func short(d string) string {
	alg, hex, ok := strings.Cut(d, ":")
	if !ok || len(hex) <= 12 {
		return d
	}
	return alg + ":" + hex[:12]
}

// clip cuts s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if n < 2 || len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// Summary is a one-line account for the DIFF result: "identical", or
// which images differ and where, clipped to max bytes.
func (rep *Report) Summary(max int) string {
	var parts []string
	for _, r := range rep.Images {
		switch {
		case r.Identical:
		case r.Diff == nil:
			parts = append(parts, r.Image+": "+r.Reason)
		default:
			parts = append(parts, r.Image+": "+diffSummary(*r.Diff))
		}
	}
	if len(parts) == 0 {
		return "identical"
	}
	s := strings.Join(parts, "; ")
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

func diffSummary(d Diff) string {
	var parts []string
	if n := len(d.Manifest); n > 0 {
		parts = append(parts, fmt.Sprintf("%d manifest fields", n))
	}
	if n := len(d.Config); n > 0 {
		parts = append(parts, fmt.Sprintf("%d config fields", n))
	}
	for _, l := range d.Layers {
		s := fmt.Sprintf("layer %d", l.Index)
		if len(l.Files) > 0 {
			var paths []string
			for i, f := range l.Files {
				if i == 3 {
					paths = append(paths, "…")
					break
				}
				paths = append(paths, f.Path)
			}
			s += fmt.Sprintf(" (%d files: %s)", len(l.Files), strings.Join(paths, ", "))
		}
		parts = append(parts, s)
	}
	for _, p := range d.Platforms {
		parts = append(parts, p.Platform+" "+diffSummary(p))
	}
	return strings.Join(parts, ", ")
}

// wrap breaks s into lines of at most n columns at spaces (a word longer
// than n, a digest say, gets a line of its own).
func wrap(s string, n int) []string {
	var lines []string
	var cur string
	for _, word := range strings.Fields(s) {
		switch {
		case cur == "":
			cur = word
		case len([]rune(cur))+1+len([]rune(word)) <= n:
			cur += " " + word
		default:
			lines = append(lines, cur)
			cur = word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
