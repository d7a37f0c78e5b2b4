// Command catalog writes catalog/ from tasks/ and pipelines/ (make catalog)
// and pushes the Tekton bundles (make bundles). The work is in pkg/catalog.
// release (make release) builds the kiln-steps image into an OCI layout,
// without pushing it, and pins its digest in tasks/ and pipelines/.
//
//	go run ./hack/catalog generate [-root .] [-out catalog]
//	go run ./hack/catalog bundles -registry host/path [-root .] [names…]
//	go run ./hack/catalog release -tag v0.1.0 -oci _out/release/kiln-steps [-root .] [-base stepsbase.tar.gz]
package main
