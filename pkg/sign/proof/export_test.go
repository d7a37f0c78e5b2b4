package proof

// ProveWith is proveWith, for the side-by-side test in package proof_test.
var ProveWith = proveWith
