#!/usr/bin/env bash
# tektoncd/catalog's test runner sources this hook with TMPF, a copy of one
# tests/*.yaml, before it creates it. It fills in what only the cluster
# running the test knows, from the variables kiln's e2e exports
# (test/e2e/catalog_test.go): the kiln-steps image it built, its
# registry, the worker pool's current image and the driver toolkit.
sed -i \
  -e "s|@KILN_E2E_STEPS_IMAGE@|${KILN_E2E_STEPS_IMAGE:?}|g" \
  -e "s|@KILN_E2E_REGISTRY@|${KILN_E2E_REGISTRY:?}|g" \
  -e "s|@KILN_E2E_IMAGE@|${KILN_E2E_IMAGE:?}|g" \
  -e "s|@KILN_E2E_DTK_IMAGE@|${KILN_E2E_DTK_IMAGE:?}|g" \
  "${TMPF:?}"
