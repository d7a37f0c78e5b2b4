//go:build unix

package localrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// lockFile in the output folder marks the run that owns it. The lock is
// flock(2) on the file, which the kernel drops when its holder dies, however
// it dies; the file's text only names the holder for the error message.
// The file is never removed: a second run that opened it just before the
// removal would lock an orphaned inode while a third locked a new one.
const lockFile = "kiln.lock"

// lockOutput takes the output folder for this process, or fails at once
// naming the run that holds it. release unlocks it and clears the holder.
func lockOutput(out string) (release func(), err error) {
	path := filepath.Join(out, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the lock of output folder %s: %w", out, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("output folder %s is in use by another run (%s); wait for it or use another --output-dir", out, describeHolder(holder, path))
		}
		return nil, fmt.Errorf("locking output folder %s: %w", out, err)
	}
	// What is in the file now was written by a holder that is gone.
	if err := f.Truncate(0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing the lock of output folder %s: %w", out, err)
	}
	host, _ := os.Hostname()
	me := fmt.Sprintf("pid %d\nhost %s\nstarted %s\ncommand %s\n", os.Getpid(), host,
		time.Now().UTC().Format(time.RFC3339), strconv.Quote(strings.Join(os.Args, " ")))
	if _, err := f.WriteAt([]byte(me), 0); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("writing the lock of output folder %s: %w", out, err)
	}
	return func() {
		_ = f.Truncate(0)
		_ = f.Close()
	}, nil
}

// describeHolder turns the lock file's text into "pid N on host H since T,
// command C"; the text is the holder's claim, shown as such.
func describeHolder(text []byte, path string) string {
	fields := map[string]string{}
	for _, line := range strings.Split(string(text), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			fields[k] = v
		}
	}
	if fields["pid"] == "" {
		return "holder not yet recorded in " + path
	}
	return fmt.Sprintf("pid %s on host %s since %s, command %s; lock file %s",
		fields["pid"], fields["host"], fields["started"], fields["command"], path)
}
