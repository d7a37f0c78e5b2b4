// Package pipeline is the local executor: it runs pipelines/*.yaml on one
// machine with Tekton's own substitution, DAG and validation code. It loads
// and validates Tasks and Pipelines exactly as Tekton's admission webhook
// would (defaults, then validation), plus kiln's own contract between a
// Pipeline and its Tasks (CheckPipelineTasks).
package pipeline
