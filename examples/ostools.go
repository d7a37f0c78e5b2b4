package examples

import (
	"fmt"
	"os"
	"strings"
)

// The sample base's userland. RHCOS cannot be pulled here, so the base
// carries just enough for kiln's buildah path (extensions and kernelType,
// pkg/osimage/containerfile.go) to run for real: Debian's static bash as
// /bin/bash and /bin/sh, Debian's static busybox for the few commands the
// generated scripts call, and small shell stand-ins for rpm, rpm-ostree,
// ostree and systemctl that keep the command-line contract kiln relies on
// and fail on anything else. They are the sample's, not something kiln
// ships: a real cluster's base is RHCOS with the real tools.
//
// The shell is bash, not busybox's ash: Debian's busybox-static prefers its
// own applets to PATH, and it has an rpm applet, so `rpm -q` in ash would
// never reach the stand-in.
//
// Packages are the sample's own format, not RPMs: the extensions image's
// repository folder holds NAME.tar per package, and the "rpm database"
// is /usr/share/kiln-sample/rpmdb/NAME, the list of the package's files.

// BusyboxPath and BashPath are the static binaries the base carries
// (Debian's busybox-static and bash-static, installed by make tools).
// Their bytes are part of the base's digest: a Debian update of either
// package moves the pins (TestManifestsPinBuiltImages says so).
const (
	BusyboxPath = "/bin/busybox"
	BashPath    = "/bin/bash-static"
)

// RTKernelVersion is the realtime kernel the extensions image offers:
// RHEL 9's kernel-rt has the default kernel's version and release and
// "+rt" in its uname, which is how kmod-build names it when the driver
// toolkit (here a Debian stand-in) has no /etc/driver-toolkit-release.json.
const RTKernelVersion = KernelVersion + "+rt"

const rpmdb = "usr/share/kiln-sample/rpmdb/"

// busyboxApplets are the commands the Containerfile's RUN lines and the
// stand-ins below use.
var busyboxApplets = []string{"cat", "rm", "sed", "tar", "head", "mkdir", "ln", "ls", "grep"}

// baseKernelPackages are the default kernel's packages with the files each
// owns in the base, so that `rpm-ostree override remove` has something
// real to remove.
var baseKernelPackages = map[string][]string{
	"kernel":               nil,
	"kernel-core":          {"usr/lib/modules/" + KernelVersion + "/vmlinuz"},
	"kernel-modules":       nil,
	"kernel-modules-core":  {"usr/lib/modules/" + KernelVersion + "/modules.builtin"},
	"kernel-modules-extra": nil,
}

const rpmOstreeScript = `#!/bin/sh
# rpm-ostree stand-in of kiln's sample base (examples/ostools.go), not
# RHCOS's. It does what kiln's buildah path asks of rpm-ostree, on the
# sample's package format: "install PKG..." and
# "override remove OLD... --install NEW...", from the repository that
# /etc/yum.repos.d/*.repo names; anything else fails.
set -eu
db=/` + rpmdb + `
repo() { sed -n 's/^baseurl=//p' /etc/yum.repos.d/*.repo 2>/dev/null | head -n 1; }
add() {
  r="$(repo)"
  [ -n "$r" ] || { echo "rpm-ostree: no repository configured in /etc/yum.repos.d" >&2; exit 1; }
  [ -f "$r/$1.tar" ] || { echo "rpm-ostree: package $1 not found in $r" >&2; exit 1; }
  tar -xf "$r/$1.tar" -C /
  tar -tf "$r/$1.tar" | grep -v '/$' > "$db/$1"
  echo "Installed: $1"
}
del() {
  [ -f "$db/$1" ] || { echo "rpm-ostree: package $1 is not installed" >&2; exit 1; }
  while read -r f; do rm -f "/$f"; done < "$db/$1"
  rm -f "$db/$1"
  echo "Removed: $1"
}
case "${1:-}" in
install)
  shift
  [ $# -gt 0 ] || { echo "rpm-ostree install: no packages" >&2; exit 1; }
  for p in "$@"; do add "$p"; done ;;
override)
  [ "${2:-}" = remove ] || { echo "rpm-ostree override: only remove is supported" >&2; exit 2; }
  shift 2
  old=; new=
  while [ $# -gt 0 ]; do
    case "$1" in
    --install) [ $# -ge 2 ] || { echo "rpm-ostree: --install needs a package" >&2; exit 1; }; new="$new $2"; shift 2 ;;
    *) old="$old $1"; shift ;;
    esac
  done
  for p in $old; do del "$p"; done
  for p in $new; do add "$p"; done ;;
*) echo "rpm-ostree (kiln sample stand-in): unsupported: $*" >&2; exit 2 ;;
esac
`

const rpmScript = `#!/bin/sh
# rpm stand-in of kiln's sample base: only "rpm -q PKG...".
[ "${1:-}" = -q ] && [ $# -ge 2 ] || { echo "rpm (kiln sample stand-in): only -q PKG is supported" >&2; exit 2; }
shift
rc=0
for p in "$@"; do
  if [ -f "/` + rpmdb + `$p" ]; then echo "$p"; else echo "package $p is not installed"; rc=1; fi
done
exit $rc
`

const ostreeScript = `#!/bin/sh
# ostree stand-in of kiln's sample base: only "ostree container commit",
# which on RHCOS checks the layer and cleans /tmp and /var/tmp.
[ "$*" = "container commit" ] || { echo "ostree (kiln sample stand-in): unsupported: $*" >&2; exit 2; }
rm -rf /tmp/* /var/tmp/*
`

const systemctlScript = `#!/bin/sh
# systemctl stand-in of kiln's sample base: only "systemctl enable UNIT...",
# offline, as in an image build: a link per WantedBy= of the unit's
# [Install] section.
[ "${1:-}" = enable ] && [ $# -ge 2 ] || { echo "systemctl (kiln sample stand-in): only enable UNIT is supported" >&2; exit 2; }
shift
for u in "$@"; do
  f=
  for d in /etc/systemd/system /usr/lib/systemd/system; do [ -f "$d/$u" ] && { f="$d/$u"; break; }; done
  [ -n "$f" ] || { echo "systemctl: unit $u not found" >&2; exit 1; }
  wanted="$(sed -n 's/^WantedBy=//p' "$f")"
  [ -n "$wanted" ] || { echo "systemctl: unit $u has no WantedBy= to enable" >&2; exit 1; }
  for t in $wanted; do
    mkdir -p "/etc/systemd/system/$t.wants"
    ln -sf "/usr/lib/systemd/system/$u" "/etc/systemd/system/$t.wants/$u"
    echo "Created symlink /etc/systemd/system/$t.wants/$u -> /usr/lib/systemd/system/$u."
  done
done
`

// baseTools are the base image's entries for its userland.
func baseTools() ([]entry, error) {
	bins := map[string]string{}
	for _, p := range []string{BusyboxPath, BashPath} {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("reading %s for the sample base's userland (make tools installs it): %w", p, err)
		}
		bins[p] = string(b)
	}
	es := []entry{
		{name: "bin", link: "usr/bin"},
		{name: "etc/systemd/"}, {name: "etc/systemd/system/"}, {name: "etc/yum.repos.d/"},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/bin/"},
		{name: "usr/bin/bash", data: bins[BashPath], mode: 0o755},
		{name: "usr/bin/busybox", data: bins[BusyboxPath], mode: 0o755},
		{name: "usr/bin/sh", link: "bash"},
		{name: "usr/bin/ostree", data: ostreeScript, mode: 0o755},
		{name: "usr/bin/rpm", data: rpmScript, mode: 0o755},
		{name: "usr/bin/rpm-ostree", data: rpmOstreeScript, mode: 0o755},
		{name: "usr/bin/systemctl", data: systemctlScript, mode: 0o755},
	}
	for _, a := range busyboxApplets {
		es = append(es, entry{name: "usr/bin/" + a, link: "busybox"})
	}
	es = append(es, entry{name: "usr/lib/systemd/"}, entry{name: "usr/lib/systemd/system/"},
		entry{name: "usr/share/"}, entry{name: "usr/share/kiln-sample/"}, entry{name: rpmdb})
	for _, p := range sortedKeys(baseKernelPackages) {
		es = append(es, entry{name: rpmdb + p, data: lines(baseKernelPackages[p])})
	}
	return es, nil
}

// extensionPackages are the packages the sample's extensions repository
// offers: usbguard (MC 70-infra-usbguard) and the realtime kernel (MC
// 60-infra-realtime-kernel), with files that say what they are.
func extensionPackages() map[string][]entry {
	rt := "usr/lib/modules/" + RTKernelVersion + "/"
	mods := func(name string) []entry {
		return []entry{{name: "usr/"}, {name: "usr/lib/"}, {name: "usr/lib/modules/"}, {name: rt},
			{name: rt + name, data: "kiln sample stand-in: " + name + " of kernel-rt " + RTKernelVersion + "\n"}}
	}
	return map[string][]entry{
		"usbguard": {{name: "usr/"}, {name: "usr/bin/"},
			{name: "usr/bin/usbguard", data: "#!/bin/sh\necho 'usbguard (kiln sample stand-in)'\n", mode: 0o755},
			{name: "usr/lib/"}, {name: "usr/lib/systemd/"}, {name: "usr/lib/systemd/system/"},
			{name: "usr/lib/systemd/system/usbguard.service", data: usbguardUnit}},
		"kernel-rt-core":          mods("vmlinuz"),
		"kernel-rt-modules":       mods("modules.builtin"),
		"kernel-rt-modules-extra": mods("modules.extra"),
		"kernel-rt-kvm":           mods("kvm.ko"),
	}
}

const usbguardUnit = `[Unit]
Description=Deny USB devices not in the policy (kiln sample stand-in)

[Service]
ExecStart=/usr/bin/usbguard

[Install]
WantedBy=basic.target
`

func lines(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return strings.Join(ss, "\n") + "\n"
}
