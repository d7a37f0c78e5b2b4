package step

// ResultsAPIVersion is the Tekton API the steps' results are written for:
// the tekton.dev/v1 Task result contract (one file per result under
// --results-dir, shared 4096-byte budget per step, result names as
// docs/architecture.md lists them). The Tasks and Pipelines under tasks/ and
// pipelines/ are tekton.dev/v1 objects; a change to result names or their
// format that a v1 Task could not read needs a new value here.
const ResultsAPIVersion = "tekton.dev/v1"
