#!/usr/bin/env bash
# make tools: installs everything kiln's tests need, idempotently.
#   - Debian packages (hack/packages.sh)
#   - Kubernetes binaries built from k8s.io/kubernetes (hack/tools module)
#   - Tekton Pipelines' commands built from tektoncd/pipeline (hack/tekton)
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

k8sdir="$cache/bin/k8s-$K8S_VERSION"
mkdir -p "$k8sdir"
major="${K8S_VERSION#v}"; major="${major%%.*}"
minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
ldflags="-s -w"
for v in gitVersion=$K8S_VERSION gitMajor=$major gitMinor=$minor gitTreeState=clean; do
  ldflags="$ldflags -X k8s.io/component-base/version.$v"
done
for c in $components; do
  if [ -x "$k8sdir/$c" ]; then
    echo "$c $K8S_VERSION: cached"
    continue
  fi
  echo "$c $K8S_VERSION: building (a cold build takes several minutes)"
  start=$SECONDS
  (cd "$root/hack/tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" \
    -o "$k8sdir/$c.tmp" "k8s.io/kubernetes/cmd/$c")
  mv "$k8sdir/$c.tmp" "$k8sdir/$c"
  echo "$c $K8S_VERSION: built in $((SECONDS - start))s"
done
tektondir="$cache/bin/tekton-$TEKTON_VERSION"
mkdir -p "$tektondir"
for c in controller entrypoint nop sidecarlogresults workingdirinit; do
  if [ -x "$tektondir/$c" ]; then
    echo "tekton $c $TEKTON_VERSION: cached"
    continue
  fi
  echo "tekton $c $TEKTON_VERSION: building"
  start=$SECONDS
  (cd "$root/hack/tekton" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" \
    -o "$tektondir/$c.tmp" "github.com/tektoncd/pipeline/cmd/$c")
  mv "$tektondir/$c.tmp" "$tektondir/$c"
  echo "tekton $c $TEKTON_VERSION: built in $((SECONDS - start))s"
done
# envtest looks for etcd next to kube-apiserver (KUBEBUILDER_ASSETS).
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
