// Package textwrap breaks text into lines for log panes: the Tekton
// Dashboard's and tkn's panes show about 100 columns before they wrap a
// line themselves, mid-word. The report and the rollout log share it, so
// both break lines the same way.
package textwrap

import "strings"

// Wrap breaks s into lines of at most width runes at spaces (runs of
// white space count as one). A word never splits unless it alone is longer
// than width (a long digest reference), so a MachineConfig name, at most
// 48 runes as MCO writes them (rendered-<pool>-<md5>), stays whole on any
// pane wider than that. A width below 1 is taken as 1.
func Wrap(s string, width int) []string {
	width = max(width, 1)
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(s) {
		wr := []rune(word)
		for len(wr) > width {
			if len(cur) > 0 {
				lines, cur = append(lines, string(cur)), nil
			}
			lines, wr = append(lines, string(wr[:width])), wr[width:]
		}
		switch {
		case len(wr) == 0:
		case len(cur) == 0:
			cur = wr
		case len(cur)+1+len(wr) <= width:
			cur = append(append(cur, ' '), wr...)
		default:
			lines, cur = append(lines, string(cur)), wr
		}
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}
