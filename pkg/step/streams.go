package step

import (
	"context"
	"io"
)

// Streams are a run's output streams. Progress lines go to Out; errors to Err.
type Streams struct {
	Out io.Writer
	Err io.Writer
}

// Runner is one stage's options struct. The command line (cmd/cli) binds
// its flags, calls Validate before any I/O, then Run. Validate is pure: no
// network, no cluster, no file read; it reports every bad flag at once.
type Runner interface {
	Validate() error
	Run(ctx context.Context, s Streams) error
}
