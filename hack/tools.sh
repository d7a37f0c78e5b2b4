#!/usr/bin/env bash
# make tools: installs everything kiln's tests need, idempotently.
#   - Debian packages (hack/packages.sh)
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

# build MODULE_DIR OUT_DIR VERSION LDFLAGS PKG: builds PKG's command into
# OUT_DIR unless it is there already.
build() {
  local mod="$1" out="$2" version="$3" ldflags="$4" pkg="$5" c start
  c="$(basename "$pkg")"
  if [ -x "$out/$c" ]; then
    echo "$c $version: cached"
    return
  fi
  echo "$c $version: building (a cold build takes minutes)"
  start=$SECONDS
  mkdir -p "$out"
  (cd "$root/hack/$mod" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "$pkg")
  mv "$out/$c.tmp" "$out/$c"
  echo "$c $version: built in $((SECONDS - start))s"
}

k8sdir="$cache/bin/k8s-$K8S_VERSION"
major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for v in gitVersion=$K8S_VERSION gitMajor=$major gitMinor=$minor gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$v"
done
for c in $components; do
  build tools "$k8sdir" "$K8S_VERSION" "$ldflags" "k8s.io/kubernetes/cmd/$c"
done
for c in controller entrypoint nop sidecarlogresults workingdirinit; do
  build tekton "$cache/bin/tekton-$TEKTON_VERSION" "$TEKTON_VERSION" "-s -w" "github.com/tektoncd/pipeline/cmd/$c"
done
build chains "$cache/bin/chains-$CHAINS_VERSION" "$CHAINS_VERSION" "-s -w" "github.com/tektoncd/chains/cmd/controller"
for c in controller eventlistenersink; do
  build triggers "$cache/bin/triggers-$TRIGGERS_VERSION" "$TRIGGERS_VERSION" "-s -w" "github.com/tektoncd/triggers/cmd/$c"
done
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
