#!/usr/bin/env bash
# Installs the Debian packages kiln's tests use. Idempotent: a stamp under
# ~/.cache/kiln records the package list it last installed, and a run whose
# list is unchanged and whose packages are all present does nothing.
set -euo pipefail

PACKAGES=(
  etcd-server        # envtest's etcd (3.4 works with kube-apiserver 1.34)
  docker-registry    # real OCI registry (distribution 2.8)
  buildah            # the buildah image path and kmod builds
  skopeo             # image inspection in tests
  runc               # buildah RUN steps (crun fails on this hybrid-cgroup VM)
  kmod               # modinfo, depmod
  linux-kbuild-6.1   # scripts/sign-file: reference for kernel-module signing
  openssl            # test keys and certificates
  apache2-utils      # htpasswd for the registry auth tests
  tinyproxy-bin      # a real forward HTTP proxy for the registry proxy tests (no service)
  busybox-static     # a static shell to put in from-scratch test images
  ostree             # the node simulation (test/nodesim): commit, deploy, three-way /etc merge
  bash-static        # the sample base's shell (examples/ostools.go)
  linux-headers-amd64 # compiles real out-of-tree kernel modules for kmod tests
  debootstrap        # the driver-toolkit stand-in rootfs (hack/dtk.sh)
  containerd          # the real-Tekton e2e's node: CRI runtime for its kubelet
  containernetworking-plugins # its pod network (bridge + host-local)
  iptables            # the kubelet expects it on PATH
  iproute2            # ip: the node's bridge cleanup, the e2e registry's private address
  yamllint            # the catalog's YAML rules (.yamllint, from tektoncd/catalog) and yamllint's defaults
  shellcheck          # step scripts and tests/ hooks in the catalog, as catlin lints them
  gcc
  make
)

cache="${KILN_CACHE:-$HOME/.cache/kiln}"
stamp="$cache/stamps/packages"
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
