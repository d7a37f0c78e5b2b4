#!/usr/bin/env bash
# make tools: installs everything kiln's tests need, idempotently.
#   - Debian packages (hack/packages.sh: local mode's and the tests')
#   - Kubernetes binaries built from k8s.io/kubernetes (hack/tools module)
#   - Tekton Pipelines' commands built from tektoncd/pipeline (hack/tekton)
#   - Tekton Chains' controller (hack/chains) and Triggers' controller and
#     eventlistenersink (hack/triggers), each in its own module
#   - controller-gen
#   - the driver-toolkit stand-in image tarball for kmod tests (hack/dtk.sh)
#   - the e2e's kiln-steps base with buildah (hack/stepsbase.sh)
# Binaries live under ~/.cache/kiln/bin/<name>-<version>/; a second run finds
# them and builds nothing.
#
# KILN_K8S_COMPONENTS selects which Kubernetes commands to build (default:
# all four: the real-Tekton e2e in make test runs a kubelet, kube-scheduler
# and kube-controller-manager next to the apiserver).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
source "$root/hack/versions.sh"
cache="${KILN_CACHE:-$HOME/.cache/kiln}"
components="${KILN_K8S_COMPONENTS:-kube-apiserver kubelet kube-scheduler kube-controller-manager}"

bash "$root/hack/packages.sh"

# build MODULE_DIR OUT_DIR VERSION LDFLAGS PKG...: builds the commands of
# PKG... that OUT_DIR lacks into OUT_DIR, in one `go build`: the commands of
# one module share most of their packages (the four Kubernetes commands
# share k8s.io/kubernetes), and one invocation compiles each shared package
# once and keeps both cores busy.
build() {
  local mod="$1" out="$2" version="$3" ldflags="$4" pkg c start
  shift 4
  local todo=() names=()
  for pkg in "$@"; do
    c="$(basename "$pkg")"
    if [ -x "$out/$c" ]; then
      echo "$c $version: cached"
    else
      todo+=("$pkg")
      names+=("$c")
    fi
  done
  [ ${#todo[@]} -gt 0 ] || return 0
  echo "${names[*]} $version: building (a cold build takes minutes)"
  start=$SECONDS
  mkdir -p "$out"
  rm -rf "$out/.build"
  mkdir "$out/.build"
  if [ ${#todo[@]} -eq 1 ]; then
    # One package: -o names the file.
    (cd "$root/hack/$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/.build/${names[0]}" "${todo[0]}")
  else
    # Several: -o names a folder, each command keeps its name.
    (cd "$root/hack/$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/.build/" "${todo[@]}")
  fi
  for c in "${names[@]}"; do
    mv "$out/.build/$c" "$out/$c"
  done
  rmdir "$out/.build"
  echo "${names[*]} $version: built in $((SECONDS - start))s"
}

k8sdir="$cache/bin/k8s-$K8S_VERSION"
major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for v in gitVersion=$K8S_VERSION gitMajor=$major gitMinor=$minor gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$v"
done
k8spkgs=()
for c in $components; do
  k8spkgs+=("k8s.io/kubernetes/cmd/$c")
done
build tools "$k8sdir" "$K8S_VERSION" "$ldflags" "${k8spkgs[@]}"
tektonpkgs=()
for c in controller entrypoint nop sidecarlogresults workingdirinit; do
  tektonpkgs+=("github.com/tektoncd/pipeline/cmd/$c")
done
build tekton "$cache/bin/tekton-$TEKTON_VERSION" "$TEKTON_VERSION" "-s -w" "${tektonpkgs[@]}"
build chains "$cache/bin/chains-$CHAINS_VERSION" "$CHAINS_VERSION" "-s -w" "github.com/tektoncd/chains/cmd/controller"
build triggers "$cache/bin/triggers-$TRIGGERS_VERSION" "$TRIGGERS_VERSION" "-s -w" \
  "github.com/tektoncd/triggers/cmd/controller" "github.com/tektoncd/triggers/cmd/eventlistenersink"
# envtest looks for etcd next to kube-apiserver (KUBEBUILDER_ASSETS).
mkdir -p "$k8sdir"
ln -sf "$(command -v etcd)" "$k8sdir/etcd"

cgdir="$cache/bin/controller-gen-$CONTROLLER_GEN_VERSION"
if [ -x "$cgdir/controller-gen" ]; then
  echo "controller-gen $CONTROLLER_GEN_VERSION: cached"
else
  echo "controller-gen $CONTROLLER_GEN_VERSION: building"
  GOBIN="$cgdir" CGO_ENABLED=0 GOFLAGS= go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_GEN_VERSION"
fi
bash "$root/hack/dtk.sh"
bash "$root/hack/stepsbase.sh"
# Cluster API and provider CRDs come from these modules' caches (test/env
# reads them with `go mod download -json`); fetch them now so tests need no
# network.
(cd "${TMPDIR:-/tmp}" && GOFLAGS= go mod download \
  "sigs.k8s.io/cluster-api@$CAPI_VERSION" \
  "sigs.k8s.io/cluster-api-provider-gcp@$CAPG_VERSION" \
  "sigs.k8s.io/cluster-api-provider-aws/v2@$CAPA_VERSION")
echo "cluster-api CRD modules: ok"
echo "tools: ok ($cache/bin)"
