// Package golden compares test output with files under testdata/. One
// flag, -update, registered here for every test binary that imports the
// package, rewrites the files instead: `go test ./pkg/render -run Golden
// -update`. A mismatch prints a line diff (-want +got), not both files.
package golden
