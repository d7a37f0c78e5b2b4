package manifests

import (
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func labelled(ns, key, value string) *metav1.ObjectMeta {
	return &metav1.ObjectMeta{Name: "worker", Namespace: ns, Labels: map[string]string{key: value}}
}

func TestUintLabel(t *testing.T) {
	cases := []struct {
		value string
		want  int
		err   string
	}{
		{value: "0", want: 0},
		{value: "2", want: 2},
		{value: "007", want: 7},
		{value: "2a", err: `MachineConfigPool "worker": metadata.labels[kiln.dev/wave] "2a": want a non-negative integer`},
		{value: "-1", err: `"-1": want a non-negative integer`},
		{value: "+1", err: `"+1": want a non-negative integer`},
		{value: "", err: `"": want a non-negative integer`},
		{value: " 1", err: `" 1": want a non-negative integer`},
		{value: "1.5", err: `"1.5": want a non-negative integer`},
		{value: "99999999999999999999", err: "want a non-negative integer up to 1048576"},
		{value: "1048577", err: "want a non-negative integer up to 1048576"},
	}
	for _, c := range cases {
		t.Run(c.value, func(t *testing.T) {
			n, set, err := UintLabel("MachineConfigPool", labelled("", "kiln.dev/wave", c.value), "kiln.dev/wave")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || set {
					t.Fatalf("got %d %v %v, want error %q", n, set, err, c.err)
				}
				return
			}
			if err != nil || !set || n != c.want {
				t.Fatalf("got %d %v %v, want %d", n, set, err, c.want)
			}
		})
	}
	if _, set, err := UintLabel("MachineConfigPool", &metav1.ObjectMeta{Name: "worker"}, "kiln.dev/wave"); set || err != nil {
		t.Fatalf("absent label: set %v err %v", set, err)
	}
}

func TestBoolLabel(t *testing.T) {
	for value, want := range map[string]bool{"true": true, "false": false} {
		v, set, err := BoolLabel("MachineConfig", labelled("", "kiln.dev/managed", value), "kiln.dev/managed")
		if err != nil || !set || v != want {
			t.Errorf("%q: %v %v %v", value, v, set, err)
		}
	}
	for _, value := range []string{"True", "TRUE", "yes", "1", "", "true "} {
		_, _, err := BoolLabel("MachineConfig", labelled("ns", "kiln.dev/managed", value), "kiln.dev/managed")
		want := `MachineConfig "ns/worker": metadata.labels[kiln.dev/managed] ` + strconv.Quote(value) + `: want "true" or "false"`
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", value, err, want)
		}
	}
}

// FuzzUintLabel: any value is either refused or read back as the integer
// it spells, and never negative.
func FuzzUintLabel(f *testing.F) {
	for _, s := range []string{"0", "2a", "-1", "", "1048576", "٣"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, set, err := UintLabel("MachineConfigPool", labelled("", "k", s), "k")
		if err != nil {
			return
		}
		back, perr := strconv.Atoi(s)
		if !set || n < 0 || perr != nil || back != n {
			t.Fatalf("%q read as %d (set %v)", s, n, set)
		}
	})
}
