package imagebuild

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kiln-dev/kiln/pkg/safepath"
)

// TestReadRenderedRefusesWhatIsNotARegularFile puts a FIFO without a
// writer and a symlink to /dev/zero where image-build reads render's
// rendered.json: each is refused by type, at once, before a byte is read.
func TestReadRenderedRefusesWhatIsNotARegularFile(t *testing.T) {
	for name, plant := range map[string]func(path string) error{
		"FIFO":                 func(path string) error { return syscall.Mkfifo(path, 0o644) },
		"symlink to /dev/zero": func(path string) error { return os.Symlink("/dev/zero", path) },
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rendered.json")
			if err := plant(path); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err := ReadRendered(path)
			if d := time.Since(start); d > time.Second {
				t.Errorf("ReadRendered took %s", d)
			}
			if !errors.Is(err, safepath.ErrNotRegular) {
				t.Errorf("ReadRendered: %v, want %v", err, safepath.ErrNotRegular)
			}
		})
	}
}
