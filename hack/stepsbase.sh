#!/usr/bin/env bash
# Builds the base of the kiln-steps image that the real-Tekton e2e runs in
# pods: a Debian minbase rootfs with buildah (and the runc it runs RUN steps
# with), because image-build's buildah path and kmod-build call the buildah
# CLI, kmod, whose depmod kmod-sign runs for the kernel it places modules
# under, and git, for the e2e's stand-in of the catalog's git-clone in the
# GitOps scenario. test/env.StepsImage adds kiln-steps on top as a ko-style layer. No
# image is pulled: debootstrap fetches Debian packages, as hack/dtk.sh does.
#
# Cached as $cache/images/stepsbase-$STEPSBASE_SUITE-r$STEPSBASE_RECIPE.tar.gz.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/versions.sh"
cache="${KILN_CACHE:-$HOME/.cache/kiln}"
out="$cache/images/stepsbase-$STEPSBASE_SUITE-r$STEPSBASE_RECIPE.tar.gz"
if [ -s "$out" ]; then
  echo "stepsbase $STEPSBASE_SUITE r$STEPSBASE_RECIPE: cached"
  exit 0
fi

echo "stepsbase $STEPSBASE_SUITE r$STEPSBASE_RECIPE: building (debootstrap takes about a minute)"
start=$SECONDS
mkdir -p "$cache/images"
work="$(mktemp -d "$cache/images/stepsbase-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
debootstrap --variant=minbase --include=ca-certificates \
  "$STEPSBASE_SUITE" "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 || {
  tail -n 20 "$work/debootstrap.log" >&2
  exit 1
}
# buildah through apt in the chroot: as a debootstrap --include, its
# containers-common fails to configure in the minbase second stage.
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$rootfs/usr/sbin/policy-rc.d"
chmod 755 "$rootfs/usr/sbin/policy-rc.d"
chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  apt-get install -y -qq --no-install-recommends buildah runc git kmod >"$work/apt.log" 2>&1 || {
  tail -n 20 "$work/apt.log" >&2
  exit 1
}
rm -f "$rootfs/usr/sbin/policy-rc.d" "$rootfs/etc/resolv.conf"
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*
# A pod's containers-storage is an emptyDir on the node's filesystem, under
# a container whose own root is overlayfs: vfs needs no kernel support of
# overlay-on-overlay and no fuse.
mkdir -p "$rootfs/etc/containers"
cat >"$rootfs/etc/containers/storage.conf" <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
tar --numeric-owner --sort=name --mtime=@0 -C "$rootfs" -cf - . | gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
echo "stepsbase $STEPSBASE_SUITE r$STEPSBASE_RECIPE: built in $((SECONDS - start))s ($(du -h "$out" | cut -f1))"
