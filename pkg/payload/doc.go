// Package payload reads facts from the release payload: base OS image,
// extensions image, driver-toolkit image, release version and the coreos-
// bootimages stream.
//
// It lands with issue #3; DESIGN §2 and §4 define its contract.
package payload
