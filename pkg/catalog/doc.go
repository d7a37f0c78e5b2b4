// Package catalog publishes tasks/ and pipelines/ as a Tekton catalog: the
// TEP-0003 layout (<kind>/<name>/<version>/<name>.yaml with a README.md and
// samples/) with the metadata Tekton Hub and Artifact Hub read, and Tekton
// bundles (one OCI image per resource) for the bundles resolver. The
// sources are loaded with pkg/pipeline's strict loaders, so a resource is
// published only after Tekton's own defaulting and validation accept it.
package catalog
