// Package e2e holds TestRealTekton: the sample cluster (examples/cluster)
// on a real Tekton and Tekton Chains, every task in a real pod on a test
// node, kiln installed from config/ with the images built from this
// checkout, from the trigger's first run through rollout, reproduce, the
// GitOps path and every catalog resource's tests. README.md in this
// folder lists what each file does.
package e2e
