package bootimage

import (
	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// The only client log lines in tests are the apiserver's warnings about the
// fixtures' ClusterVersion (spec.signatureStores is not in the Default
// CRD); discard them so benchmark output stays parseable.
func init() { ctrllog.SetLogger(logr.Discard()) }
