package examples

// Test helpers for the examples_test package, whose tests import
// test/nodesim (which imports this package).
var (
	ClusterDir              = clusterDir
	RenderInto              = renderInto
	Pull                    = pull
	BuildAndSignSampleKmods = buildAndSignSampleKmods
)
