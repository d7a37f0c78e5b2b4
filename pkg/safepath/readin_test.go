package safepath

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadRegularInStaysInsideAndReadsOnlyRegularFiles: a file inside is
// read up to the cap; a symlink out of the folder, a `..` path, a FIFO
// and a folder are errors, before a byte is read.
func TestReadRegularInStaysInsideAndReadsOnlyRegularFiles(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "in"), []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	got, truncated, err := ReadRegularIn(dir, "in", 4)
	if err != nil || string(got) != "0123" || !truncated {
		t.Errorf("capped read: %q, truncated %v, %v; want \"0123\", true, nil", got, truncated, err)
	}
	if got, truncated, err = ReadRegularIn(dir, "in", 10); err != nil || string(got) != "0123456789" || truncated {
		t.Errorf("whole read: %q, truncated %v, %v", got, truncated, err)
	}
	for _, rel := range []string{"out", "../" + filepath.Base(outside) + "/secret", "fifo", "sub"} {
		if got, _, err := ReadRegularIn(dir, rel, 100); err == nil {
			t.Errorf("%s: read %q, want an error", rel, got)
		}
	}
}
