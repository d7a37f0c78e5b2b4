#!/usr/bin/env bash
# Regenerates deepcopy code and CRDs from pkg/apis.
#   hack/generate.sh CONTROLLER_GEN [ROOT]
# ROOT (default: the repository) lets the staleness test generate into a copy.
set -euo pipefail
gen="$1"
root="${2:-$(cd "$(dirname "$0")/.." && pwd)}"
if [ ! -x "$gen" ]; then
  echo "controller-gen not found at $gen: run \`make tools\`" >&2
  exit 1
fi
cd "$root"
"$gen" object paths=./pkg/apis/...
"$gen" crd:crdVersions=v1 paths=./pkg/apis/... output:crd:artifacts:config=config/crd
# The folder reader validates custom resources against the CRDs it embeds.
mkdir -p pkg/manifests/crds
for f in config/crd/*.yaml; do
  [ "$(basename "$f")" = kustomization.yaml ] || cp "$f" pkg/manifests/crds/
done
