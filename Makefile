# kiln — see README.md. Every target that needs tools installs them first
# through `make tools`, which is idempotent and caches under ~/.cache/kiln.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

include hack/versions.sh
KILN_CACHE ?= $(HOME)/.cache/kiln
export KILN_CACHE
export KUBEBUILDER_ASSETS ?= $(KILN_CACHE)/bin/k8s-$(K8S_VERSION)
CONTROLLER_GEN := $(KILN_CACHE)/bin/controller-gen-$(CONTROLLER_GEN_VERSION)/controller-gen

export CGO_ENABLED := 0
GOTAGS := containers_image_openpgp,exclude_graphdriver_btrfs,exclude_graphdriver_devicemapper
GOFLAGS_BUILD := -tags=$(GOTAGS) -trimpath
# Integration tests start real servers; two cores run two packages at once.
TEST_FLAGS ?= -p 2 -timeout 50m
BENCH ?= .

BIN := bin

.PHONY: all build tools run-deps generate catalog bundles release images install lint test e2e bench bench-image run clean help

all: build

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/'

# -buildvcs=auto: `version` prints the commit and its time even where the
# environment's GOFLAGS turn VCS stamping off.
# One `go build` for all commands: they share most packages, and a cold
# build then compiles each once with both cores busy and links them at once.
# Each binary is named after its folder: bin/kiln-steps, bin/kiln-trigger,
# bin/kiln-image-build (the image-build stage alone, as its Task runs it).
build: ## build kiln-steps, kiln-trigger and kiln-image-build into bin/
	@mkdir -p $(BIN)
	go build $(GOFLAGS_BUILD) -buildvcs=auto -o $(BIN)/ ./cmd/kiln-steps ./cmd/kiln-trigger ./cmd/kiln-image-build

tools: ## install test tools: Debian packages, kube-apiserver, controller-gen
	bash hack/tools.sh

generate: tools ## regenerate deepcopy code and CRDs (config/crd)
	bash hack/generate.sh "$(CONTROLLER_GEN)"

catalog: ## regenerate catalog/ from tasks/ and pipelines/ (TEP-0003 layout, READMEs, samples, Artifact Hub metadata)
	go run $(GOFLAGS_BUILD) ./hack/catalog generate -root . -out catalog

# One Tekton bundle per Task and Pipeline, pushed with the Docker config's
# credentials; BUNDLES=name… pushes only those.
BUNDLE_REGISTRY ?= ghcr.io/kiln-dev/catalog
BUNDLES ?=
bundles: ## push Tekton bundles to $(BUNDLE_REGISTRY)/kiln-<kind>-<name>:<version>
	go run $(GOFLAGS_BUILD) ./hack/catalog bundles -root . -registry '$(BUNDLE_REGISTRY)' $(BUNDLES)

# The kiln-steps release image, built reproducibly into an OCI layout (not
# pushed: make images pushes it, built by the same code, pkg/release); its
# digest becomes the steps image default of every Task and Pipeline, and
# catalog/ is regenerated.
RELEASE_TAG ?= v0.1.0
release: ## build kiln-steps $(RELEASE_TAG) into _out/release/kiln-steps (OCI layout) and pin its digest in tasks/, pipelines/, catalog/
	bash hack/stepsbase.sh
	go run $(GOFLAGS_BUILD) ./hack/catalog release -root . -tag '$(RELEASE_TAG)' -oci _out/release/kiln-steps
	$(MAKE) catalog

# kiln's own images (pkg/release), built from this checkout as make release
# builds kiln-steps: pushed to $(REGISTRY)/kiln-trigger and
# $(REGISTRY)/kiln-steps as $(RELEASE_TAG) with the auth file podman uses
# ($$REGISTRY_AUTH_FILE, AUTHFILE=…), each signed with the cosign key KEY
# (password in $$COSIGN_PASSWORD) and attested with SLSA v1 provenance.
# IMAGES_FLAGS passes more flags (-keyless -identity-token FILE,
# -insecure-registry HOST:PORT, -password-file FILE). The digests go to
# _out/release/images.json and images.env.
REGISTRY ?=
KEY ?=
AUTHFILE ?=
IMAGES_FLAGS ?=
images: ## build, push, sign and attest kiln-trigger and kiln-steps: make images REGISTRY=host/namespace KEY=cosign.key
	@test -n '$(REGISTRY)' || { echo 'make images: set REGISTRY=host[:port]/namespace'; exit 1; }
	bash hack/stepsbase.sh
	go run $(GOFLAGS_BUILD) ./hack/images -registry '$(REGISTRY)' -tag '$(RELEASE_TAG)' -out _out/release \
	  $(if $(KEY),-key '$(KEY)') $(if $(AUTHFILE),-authfile '$(AUTHFILE)') $(IMAGES_FLAGS)

# config/ with the images make images pushed, pinned by digest in a
# generated overlay (_out/install/kustomization.yaml), applied server-side
# to $$KUBECONFIG's cluster; what the previous install applied and this one
# lacks is deleted, and runs of an older kiln get today's labels.
install: ## install kiln with the images make images pushed: make install REGISTRY=host/namespace
	go run $(GOFLAGS_BUILD) ./hack/install -images _out/release/images.json -registry '$(REGISTRY)' -out _out/install

# The catalog's checks need Debian's yamllint and shellcheck and a
# kube-apiserver (make tools); make test runs them too.
lint: tools ## gofmt + go vet + go.mod tidy + the catalog's checks (catlint, yamllint, shellcheck)
	@out="$$(gofmt -l $$(git ls-files '*.go'; git ls-files --others --exclude-standard '*.go'))"; \
	  if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet -tags=$(GOTAGS),pins ./...
	@go mod tidy -diff >/dev/null || { echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }
	go test $(GOFLAGS_BUILD) -count=1 ./hack/catalog/catlint/ # catlin's checks, yamllint, shellcheck

test: tools ## run all tests, integration tests included (real apiserver, registry, buildah)
	go test $(GOFLAGS_BUILD) $(TEST_FLAGS) ./...

# The real-Tekton scenario alone (make test runs it too): a kubelet, containerd,
# kube-scheduler, kube-controller-manager and the Tekton controller on this
# machine; kiln installed from config/; the pipelines run in pods; then every
# catalog tests/ folder (TestRealTekton/catalog/...).
e2e: tools ## run the real-Tekton end-to-end scenario (test/e2e), with its PipelineRun table
	go test $(GOFLAGS_BUILD) -timeout 90m -count=1 -v -run '^TestRealTekton$$' ./test/e2e/

bench: tools ## run benchmarks; each prints its ratio against the reference measured in the same run
	go test $(GOFLAGS_BUILD) -run '^$$' -bench '$(BENCH)' -benchmem ./...

# Interleaved rounds of a config-only change on 100 MB and 1 GB random bases
# in 2 and 16 layers: the kiln-steps image-build program against buildah bud
# of a COPY-only Containerfile and the bare requests of the push (the floor).
# Heavy (the 1 GB base is generated, pushed and pulled by buildah); not part
# of make test.
BENCH_IMAGE_SIZES ?= 100,1024
BENCH_IMAGE_LAYERS ?= 2,16
BENCH_IMAGE_ROUNDS ?= 5
bench-image: tools ## benchmark image-build as a program vs buildah and the request floor: 100 MB / 1 GB bases, 2 / 16 layers
	KILN_BENCH_IMAGE_SIZES='$(BENCH_IMAGE_SIZES)' KILN_BENCH_IMAGE_LAYERS='$(BENCH_IMAGE_LAYERS)' \
	KILN_BENCH_IMAGE_ROUNDS='$(BENCH_IMAGE_ROUNDS)' go test $(GOFLAGS_BUILD) -timeout 90m -run '^$$' \
	  -bench '^BenchmarkImageConfigChange$$' -benchtime 1x ./pkg/osimage/

# Local mode needs no Kubernetes, Tekton, Chains or Triggers: only the Debian
# packages of local mode, the driver-toolkit stand-in and kiln itself.
run-deps: ## install what make run needs (Debian packages of local mode, the driver-toolkit stand-in), idempotently
	bash hack/packages.sh run
	bash hack/dtk.sh

# The driver-toolkit stand-in (debootstrap: mostly downloads) is made while
# kiln compiles.
run: ## local mode on examples/cluster: registry on 127.0.0.1:5555, the pipeline per pool, the GitOps change in _out/
	bash hack/packages.sh run
	bash hack/dtk.sh & dtk=$$!; $(MAKE) --no-print-directory build || { wait $$dtk; exit 1; }; wait $$dtk
	GOTAGS='$(GOTAGS)' bash hack/run.sh

clean:
	rm -rf $(BIN) _output
