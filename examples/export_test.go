package examples

// Test helpers for the examples_test package, whose tests import
// test/nodesim (which imports this package).
var (
	ClusterDir              = clusterDir
	Pull                    = pull
	BuildAndSignSampleKmods = buildAndSignSampleKmods
)
