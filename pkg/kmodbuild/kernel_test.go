package kmodbuild

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPayloadKernels: the realtime and 64k-pages kernels are the payload
// kernel's RHEL 9 variants unless the driver toolkit's release file names
// the realtime one; a toolkit of another release is refused; For picks a
// pool's kernel and refuses an unknown kernelType.
func TestPayloadKernels(t *testing.T) {
	const k = "5.14.0-570.62.1.el9_6.x86_64"
	for _, tc := range []struct {
		name    string
		dtk     *DTKRelease
		want    Kernels
		wantErr string
	}{
		{name: "no release file", want: Kernels{"default": k, "realtime": k + "+rt", "64k-pages": k + "+64k"}},
		{name: "release file names the realtime kernel", dtk: &DTKRelease{KernelVersion: k, RTKernelVersion: "5.14.0-570.62.1.rt14.347.el9_6.x86_64"},
			want: Kernels{"default": k, "realtime": "5.14.0-570.62.1.rt14.347.el9_6.x86_64", "64k-pages": k + "+64k"}},
		{name: "release file without a realtime kernel", dtk: &DTKRelease{KernelVersion: k},
			want: Kernels{"default": k, "realtime": k + "+rt", "64k-pages": k + "+64k"}},
		{name: "toolkit of another release", dtk: &DTKRelease{KernelVersion: "5.14.0-427.13.1.el9_4.x86_64"},
			wantErr: `the driver toolkit's /etc/driver-toolkit-release.json names kernel "5.14.0-427.13.1.el9_4.x86_64", the OS image boots ` + k},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PayloadKernels(k, tc.dtk)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr+": they are not from the same release" {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("kernels (-want +got):\n%s", diff)
			}
		})
	}
	ks, _ := PayloadKernels(k, nil)
	for kt, want := range map[string]string{"": k, "default": k, "realtime": k + "+rt", "64k-pages": k + "+64k"} {
		if got, err := ks.For(kt); err != nil || got != want {
			t.Errorf("For(%q) = %q, %v; want %q", kt, got, err, want)
		}
	}
	if _, err := ks.For("rt"); err == nil || err.Error() != `spec.kernelType "rt": want default, realtime or 64k-pages` {
		t.Errorf("For(rt) error %v", err)
	}
}
