// Package pipeline is the local executor: it runs pipelines/*.yaml on one
// machine with Tekton's own substitution, DAG and validation code.
//
// It lands with issue #8; DESIGN §2 and §7 define its contract.
package pipeline
