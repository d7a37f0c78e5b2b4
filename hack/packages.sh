#!/usr/bin/env bash
# Installs the Debian packages kiln needs. Idempotent: a stamp under
# ~/.cache/kiln records the package list it last installed, and a run whose
# list is unchanged and whose packages are all present does nothing.
#
#   bash hack/packages.sh        everything make test needs (make tools)
#   bash hack/packages.sh run    only what local mode needs (make run)
set -euo pipefail

# What `make run` (local mode on examples/cluster) uses.
RUN_PACKAGES=(
  docker-registry    # the local registry make run pushes to (distribution 2.8)
  buildah            # the buildah image path and kmod builds
  runc               # buildah RUN steps (crun fails on this hybrid-cgroup VM)
  kmod               # depmod for day-0 modules
  linux-headers-amd64 # the driver-toolkit stand-in's kernel headers (hack/dtk.sh)
  debootstrap        # the driver-toolkit stand-in rootfs (hack/dtk.sh)
  busybox-static     # the sample base's commands (examples/ostools.go)
  bash-static        # the sample base's shell (examples/ostools.go)
  ca-certificates    # debootstrap's and the Go proxy's TLS
  curl               # hack/run.sh waits for the registry with it
)

# What make test adds: servers, a node for the real-Tekton e2e, linters.
TEST_PACKAGES=(
  etcd-server        # envtest's etcd (3.4 works with kube-apiserver 1.34)
  skopeo             # image inspection in tests
  linux-kbuild-6.1   # scripts/sign-file: reference for kernel-module signing
  openssl            # test keys and certificates
  apache2-utils      # htpasswd for the registry auth tests
  tinyproxy-bin      # a real forward HTTP proxy for the registry proxy tests (no service)
  ostree             # the node simulation (test/nodesim): commit, deploy, three-way /etc merge
  containerd          # the real-Tekton e2e's node: CRI runtime for its kubelet
  containernetworking-plugins # its pod network (bridge + host-local)
  iptables            # the kubelet expects it on PATH
  iproute2            # ip: the node's bridge cleanup, the e2e registry's private address
  yamllint            # the catalog's YAML rules (.yamllint, from tektoncd/catalog) and yamllint's defaults
  shellcheck          # step scripts and tests/ hooks in the catalog, as catlin lints them
  gcc
  make
)

set_name="${1:-test}"
case "$set_name" in
  run) PACKAGES=("${RUN_PACKAGES[@]}") ;;
  test) PACKAGES=("${RUN_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: $0 [run|test]" >&2; exit 2 ;;
esac

cache="${KILN_CACHE:-$HOME/.cache/kiln}"
stamp="$cache/stamps/packages-$set_name"
want="$(printf '%s\n' "${PACKAGES[@]}")"
mkdir -p "$cache/stamps"

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "packages: up to date"
  exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
if [ ${#missing[@]} -gt 0 ]; then
  echo "packages: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Packages such as etcd-server ship services; tests start their own
  # processes, so keep the package scripts from starting any.
  policy=/usr/sbin/policy-rc.d
  created_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 755 "$policy"
    created_policy=1
  fi
  trap '[ -n "$created_policy" ] && $sudo rm -f "$policy"' EXIT
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
printf '%s' "$want" >"$stamp"
echo "packages: ok"
