package modsign

import (
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestPlanPlacement: KMM's /opt layout is moved to where the booted
// kernel loads modules and firmware; depmod's old /opt output is dropped;
// a COPY through CoreOS's /opt link (landing in /var/opt) is found and
// moved the same way; anything a node would lose and kiln cannot place is
// refused, naming the file.
func TestPlanPlacement(t *testing.T) {
	const kver = "5.14.0-570.62.1.el9_6.x86_64+rt"
	const opt = "opt/lib/modules/" + kver + "/"
	const extra = "/usr/lib/modules/" + kver + "/extra/"
	reg := func() *fstest.MapFile { return &fstest.MapFile{Mode: 0o644, Data: []byte("x")} }
	dir := func() *fstest.MapFile { return &fstest.MapFile{Mode: fs.ModeDir | 0o755} }
	link := func(to string) *fstest.MapFile {
		return &fstest.MapFile{Mode: fs.ModeIrregular, Sys: header{link: to}}
	}
	for _, tc := range []struct {
		name    string
		files   fstest.MapFS
		signed  []string
		want    *Placement
		wantErr string
	}{
		{
			name: "KMM layout with depmod output, an unsigned module and firmware",
			files: fstest.MapFS{"opt": dir(), "opt/lib/modules": dir(), opt + "a.ko": reg(), opt + "sub/b.ko.xz": reg(),
				opt + "modules.dep": reg(), opt + "modules.dep.bin": reg(), "opt/lib/firmware/acme/fw.bin": reg(),
				"var/lib/firmware/acme/other.bin": reg(), "usr/lib/modules/" + kver: dir()},
			signed: []string{"/" + opt + "a.ko"},
			want: &Placement{Kernel: kver,
				Modules: []Move{{From: "/" + opt + "a.ko", To: extra + "a.ko", Signed: true}, {From: "/" + opt + "sub/b.ko.xz", To: extra + "sub/b.ko.xz"}},
				Firmware: []Move{{From: "/opt/lib/firmware/acme/fw.bin", To: "/usr/lib/firmware/acme/fw.bin"},
					{From: "/var/lib/firmware/acme/other.bin", To: "/usr/lib/firmware/acme/other.bin"}}},
		},
		{
			name:   "COPY through CoreOS's /opt link",
			files:  fstest.MapFS{"opt": link("var/opt"), "var/opt/lib/modules/" + kver + "/a.ko": reg(), opt + "a.ko": reg()},
			signed: []string{"/var/opt/lib/modules/" + kver + "/a.ko"},
			want:   &Placement{Kernel: kver, Modules: []Move{{From: "/var/opt/lib/modules/" + kver + "/a.ko", To: extra + "a.ko", Signed: true}}},
		},
		{
			name:   "a module already in place is signed there",
			files:  fstest.MapFS{"usr/lib/modules/" + kver + "/extra/a.ko": reg()},
			signed: []string{extra + "a.ko"},
			want:   &Placement{Kernel: kver},
		},
		{
			name:    "modules of another kernel",
			files:   fstest.MapFS{"opt/lib/modules/5.14.0-570.62.1.el9_6.x86_64/a.ko": reg()},
			wantErr: `placing modules: /opt/lib/modules/5.14.0-570.62.1.el9_6.x86_64/a.ko is for kernel "5.14.0-570.62.1.el9_6.x86_64", but the image is built for kernel ` + kver,
		},
		{
			name:    "other content under /opt",
			files:   fstest.MapFS{"opt/acme/bin/tool": reg()},
			wantErr: "placing modules: /opt/acme/bin/tool: a node drops /opt",
		},
		{
			name:    "a non-module file beside the modules",
			files:   fstest.MapFS{opt + "README": reg()},
			wantErr: "placing modules: /" + opt + "README is neither a kernel module nor depmod's output",
		},
		{
			name:    "a link under /opt",
			files:   fstest.MapFS{opt + "a.ko": link("/etc/shadow")},
			wantErr: "placing modules: /" + opt + "a.ko is not a regular file",
		},
		{
			name:    "a signed module outside both layouts",
			files:   fstest.MapFS{"usr/local/a.ko": reg()},
			signed:  []string{"/usr/local/a.ko"},
			wantErr: "placing modules: /usr/local/a.ko (spec.osMapping.sign.filesToSign) is neither under /opt/lib/modules/" + kver + "/ nor under /usr/lib/modules/" + kver + "/",
		},
		{
			name:    "the same module under /opt and /var/opt",
			files:   fstest.MapFS{opt + "a.ko": reg(), "var/opt/lib/modules/" + kver + "/a.ko": reg()},
			wantErr: "placing modules: /" + opt + "a.ko and /var/opt/lib/modules/" + kver + "/a.ko would both become " + extra + "a.ko",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := planPlacement(tc.files, tc.signed, kver)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlacedPath: filesToSign's /opt names map to the placed module, in
// paths and in globs; other names are kept.
func TestPlacedPath(t *testing.T) {
	const k = "6.1.0-56-amd64"
	for in, want := range map[string]string{
		"/opt/lib/modules/" + k + "/kiln-hello.ko": "/usr/lib/modules/" + k + "/extra/kiln-hello.ko",
		"/opt/lib/modules/" + k + "/*.ko":          "/usr/lib/modules/" + k + "/extra/*.ko",
		"/opt/lib/modules/other/a.ko":              "/opt/lib/modules/other/a.ko",
		"/usr/lib/modules/" + k + "/extra/a.ko":    "/usr/lib/modules/" + k + "/extra/a.ko",
	} {
		if got := placedPath(in, k); got != want {
			t.Errorf("placedPath(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzPlaceFile: whatever clean path an image holds under the moved
// folders, a placement stays inside the kernel's extra/ folder or
// /usr/lib/firmware, and a module keeps its name.
func FuzzPlaceFile(f *testing.F) {
	const kver = "6.1.0-56-amd64"
	for _, s := range []string{"opt/lib/modules/" + kver + "/a.ko", "opt/lib/firmware/x/y.bin", "var/lib/firmware/../../etc/shadow",
		"opt/lib/modules/" + kver + "/modules.dep", "var/opt/lib/modules/" + kver + "/sub/b.ko.xz", "opt/lib/modules/" + kver + "/.ko"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		p = strings.TrimPrefix(path.Clean(p), "/")
		if !isMoved(p) {
			return
		}
		to, firmware, err := placeFile(p, kver)
		if err != nil || to == "" {
			return
		}
		switch {
		case !fs.ValidPath(to):
			t.Fatalf("placeFile(%q) = %q: not a plain path", p, to)
		case firmware && !strings.HasPrefix(to, FirmwareDir):
			t.Fatalf("placeFile(%q) = %q: firmware outside %s", p, to, FirmwareDir)
		case !firmware && (!strings.HasPrefix(to, ModulesDir+kver+"/"+ExtraDir+"/") || path.Base(to) != path.Base(p)):
			t.Fatalf("placeFile(%q) = %q: module outside extra/ or renamed", p, to)
		}
	})
}
