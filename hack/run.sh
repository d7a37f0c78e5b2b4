#!/usr/bin/env bash
# make run: local mode on examples/cluster (docs/local-mode.md).
# Starts Debian's docker-registry on 127.0.0.1:5555 (the address the
# sample's manifests name) with its storage under the output folder, pushes
# the sample's locally made images (hack/examplebase, no pulls), then runs
# `kiln-trigger --source dir:examples/cluster --once`. The registry stops when
# this script ends; its storage stays, so a second `make run` finds the
# images of the first and, with no change, does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${KILN_RUN_OUT:-_out}"
addr="127.0.0.1:5555"
mkdir -p "$out/registry"
out="$(cd "$out" && pwd)"
cat > "$out/registry/config.yml" <<CFG
version: 0.1
storage:
  filesystem:
    rootdirectory: $out/registry/data
  delete:
    enabled: true
http:
  addr: $addr
log:
  level: error
CFG
if curl -fsS "http://$addr/v2/" >/dev/null 2>&1; then
  echo "make run: something already listens on $addr; stop it first" >&2
  exit 1
fi
docker-registry serve "$out/registry/config.yml" >"$out/registry/registry.log" 2>&1 &
registry=$!
trap 'kill "$registry" 2>/dev/null || true; wait "$registry" 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -fsS "http://$addr/v2/" >/dev/null 2>&1 && break
  sleep 0.2
done
curl -fsS "http://$addr/v2/" >/dev/null || { echo "make run: docker-registry did not start (see $out/registry/registry.log)" >&2; exit 1; }

dtk="$(ls "${KILN_CACHE:-$HOME/.cache/kiln}"/images/dtk-*.tar.gz 2>/dev/null | head -n1 || true)"
[ -n "$dtk" ] || { echo "make run: no driver-toolkit stand-in under ~/.cache/kiln/images: run make run-deps" >&2; exit 1; }
echo "== pushing the sample's images to $addr"
go run -tags="$GOTAGS" -trimpath ./hack/examplebase --dtk "$dtk"
echo "== kiln-trigger --source dir:examples/cluster --once --output-dir $out"
# Keys live in the cache, not the output folder: a run from an empty
# output folder signs with the same keys, so it gives the same digests
# (the infra pool's kmod image holds signed modules).
keys="${KILN_RUN_KEYS:-${KILN_CACHE:-$HOME/.cache/kiln}/run-keys}"
bin="$(cd "${KILN_BIN:-bin}" && pwd)"
"$bin/kiln-trigger" --source dir:examples/cluster --once --output-dir "$out" --keys-dir "$keys" --registry "$addr" --steps "$bin/kiln-steps" --root .
