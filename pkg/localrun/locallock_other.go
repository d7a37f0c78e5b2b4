//go:build !unix

package localrun

import "errors"

// lockOutput: local mode needs flock(2) to keep two runs apart.
func lockOutput(string) (func(), error) {
	return nil, errors.New("local mode needs flock(2) to lock the output folder; this platform has none")
}
