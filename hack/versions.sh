# Tool versions: the single source for hack/tools.sh, the Makefile (which
# includes this file) and test/env (which reads it).
# Kubernetes: v1.34.11 and v1.34.12 fail the checksum database; keep v1.34.10.
K8S_VERSION=v1.34.10
# Tekton Pipelines for the real-Tekton e2e (hack/tekton builds its commands);
# keep equal to the main module's github.com/tektoncd/pipeline.
TEKTON_VERSION=v1.10.0
# Tekton Chains and Triggers for the ecosystem e2e (hack/chains and
# hack/triggers build them); keep equal to those modules' requirements.
# Chains v0.25.0 and v0.27+ are refused by the module proxy.
CHAINS_VERSION=v0.26.2
TRIGGERS_VERSION=v0.35.0
CONTROLLER_GEN_VERSION=v0.19.0
# Driver-toolkit stand-in for kmod tests (hack/dtk.sh): bump when its recipe
# changes; the tarball is also keyed by the host's kernel-headers version.
DTK_SUITE=bookworm
DTK_RECIPE=1
# Base of the e2e's kiln-steps image, with buildah, kmod and git (hack/stepsbase.sh).
STEPSBASE_SUITE=bookworm
STEPSBASE_RECIPE=3
# Cluster API CRDs for test/env, read from the module cache (download-only:
# kiln never imports these modules, so go.mod does not list them).
CAPI_VERSION=v1.12.0
CAPG_VERSION=v1.13.1
CAPA_VERSION=v2.13.0
