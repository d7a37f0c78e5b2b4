package buildah

import (
	"bytes"
	"regexp"
	"sync"
)

// budStepRE is the line buildah bud prints as it starts each instruction
// of a Containerfile: "STEP 2/5: RUN make", led by "[1/2] " in a
// multi-stage build (buildah's imagebuildah executor). It is compiled on
// first use, not at every start of the binaries that link this package.
var budStepRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\[\d+/\d+\] )?STEP \d+(/\d+)?: `)
})

// maxBudLine bounds the partial line BudSteps holds: a line longer than
// this (a RUN step's output without a newline) is dropped, not kept.
const maxBudLine = 64 << 10

// BudSteps is an io.Writer for buildah's output that passes each STEP line
// to Fn, whole and without its newline, as soon as the line is complete;
// everything else (the RUN steps' own output) is left out. Its caller
// escapes the line (step.Progress does): it quotes the Containerfile.
type BudSteps struct {
	Fn      func(line string)
	partial []byte
	skip    bool // the current line went past maxBudLine
}

// Write never fails: the build's output is also kept whole elsewhere.
func (s *BudSteps) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.add(p)
			break
		}
		s.add(p[:i])
		if !s.skip && budStepRE().Match(s.partial) {
			s.Fn(string(bytes.TrimRight(s.partial, "\r")))
		}
		s.partial, s.skip = s.partial[:0], false
		p = p[i+1:]
	}
	return n, nil
}

func (s *BudSteps) add(b []byte) {
	if s.skip {
		return
	}
	if len(s.partial)+len(b) > maxBudLine {
		s.partial, s.skip = s.partial[:0], true
		return
	}
	s.partial = append(s.partial, b...)
}
