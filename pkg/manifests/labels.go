package manifests

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxLabelInt bounds integer labels: a wave number needs nothing larger,
// and a bound keeps the value an int on every platform.
const maxLabelInt = 1 << 20

// BoolLabel reads a kiln.dev label that is "true" or "false". Cluster and
// directory mode both read labels through it, so a value one mode refuses
// the other refuses with the same words: "True", "yes" or "" are errors
// naming the object and the label, never silently false.
func BoolLabel(kind string, obj metav1.Object, key string) (value, set bool, err error) {
	v, ok := obj.GetLabels()[key]
	if !ok {
		return false, false, nil
	}
	switch v {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, labelError(kind, obj, key, v, `want "true" or "false"`)
}

// UintLabel reads a kiln.dev label that is a non-negative decimal integer
// (digits only: no sign, no spaces, at most maxLabelInt). A value such as
// "2a" is an error, never a default: a wave read as 0 would run the
// riskiest pool first.
func UintLabel(kind string, obj metav1.Object, key string) (n int, set bool, err error) {
	v, ok := obj.GetLabels()[key]
	if !ok {
		return 0, false, nil
	}
	if !allDigits(v) {
		return 0, false, labelError(kind, obj, key, v, "want a non-negative integer")
	}
	u, err := strconv.ParseUint(v, 10, 32)
	if err != nil || u > maxLabelInt {
		return 0, false, labelError(kind, obj, key, v, fmt.Sprintf("want a non-negative integer up to %d", maxLabelInt))
	}
	return int(u), true, nil
}

func labelError(kind string, obj metav1.Object, key, v, want string) error {
	return fmt.Errorf("%s %s: metadata.labels[%s] %q: %s", kind, objectRef(obj), key, v, want)
}

func objectRef(obj metav1.Object) string {
	if ns := obj.GetNamespace(); ns != "" {
		return strconv.Quote(ns + "/" + obj.GetName())
	}
	return strconv.Quote(obj.GetName())
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
