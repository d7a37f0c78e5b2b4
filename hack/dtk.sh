#!/usr/bin/env bash
# Builds the driver-toolkit (DTK) stand-in used by kmod tests: a Debian
# minbase rootfs with gcc, make and libc headers, plus the host's kernel
# headers tree (linux-headers-<kver>-amd64, its -common sibling and
# linux-kbuild-6.1, which the headers' symlinks point to). The result is one
# gzip'd tar, loaded by test/env as a one-layer image with no network.
#
# Cached as $cache/images/dtk-$DTK_SUITE-r$DTK_RECIPE-<kver>.tar.gz: a second
# run with the same recipe and headers does nothing.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/versions.sh"
cache="${KILN_CACHE:-$HOME/.cache/kiln}"

headers="$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort | tail -n1)"
if [ -z "$headers" ]; then
  echo "dtk: no /usr/src/linux-headers-*-amd64 (hack/packages.sh installs linux-headers-amd64)" >&2
  exit 1
fi
kver="${headers#/usr/src/linux-headers-}"
common="${headers%-amd64}-common"
kbuild="$(readlink -f "$headers/scripts")"; kbuild="${kbuild%/scripts}"
out="$cache/images/dtk-$DTK_SUITE-r$DTK_RECIPE-$kver.tar.gz"
if [ -s "$out" ]; then
  echo "dtk $DTK_SUITE r$DTK_RECIPE $kver: cached"
  exit 0
fi

echo "dtk $DTK_SUITE r$DTK_RECIPE $kver: building (debootstrap takes about 75 s)"
start=$SECONDS
mkdir -p "$cache/images"
work="$(mktemp -d "$cache/images/dtk-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
debootstrap --variant=minbase --include=gcc,make,libc6-dev,libelf1 \
  "$DTK_SUITE" "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}
# Nothing a compiler needs: apt lists, docs, man pages, locales.
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
for d in "$headers" "$common" "$kbuild"; do
  [ -d "$d" ] || { echo "dtk: missing $d" >&2; exit 1; }
  mkdir -p "$rootfs$(dirname "$d")"
  cp -a "$d" "$rootfs$d"
done
# The tree a driver toolkit exposes: /lib/modules/<kver>/build as on RHCOS.
mkdir -p "$rootfs/usr/lib/modules/$kver"
ln -sfn "$headers" "$rootfs/usr/lib/modules/$kver/build"
tar --numeric-owner --sort=name --mtime=@0 -C "$rootfs" -cf - . | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "dtk $DTK_SUITE r$DTK_RECIPE $kver: built in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
