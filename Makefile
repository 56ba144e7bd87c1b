# The two commands: `make demo` (set everything up, run the main job) and `make test` (all tests).
# Everything else is a building block of those two or a benchmark.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-unit test-core-compiled core-compiled test-integration lint venv control-plane workload-controllers sync-chart bench-core bench-devcluster clean down chaos bench-e2e bench-write-cost bench-sim bench-hostile bench-peers

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

## Build the control-plane binaries into ~/.cache/phalanx (a no-op when they are there).
control-plane: $(STAMP)
	$(BIN)/phalanx dev-cluster build

## Build the JobSet, LWS and Trainer controllers the integration tier runs (a no-op when they are there).
workload-controllers: $(STAMP)
	$(BIN)/python -m phalanx.devcluster.controllers

## The main job: the local cluster with fake GPU nodes, and what it holds.
demo: control-plane
	$(BIN)/python -m phalanx.demo

lint: $(STAMP)
	$(BIN)/ruff check operator tests bench tools setup.py
	$(BIN)/ruff format --check operator tests bench tools setup.py
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/shellcheck deploy/kind/*.sh .ci/run

test-unit: $(STAMP)
	$(BIN)/pytest tests/unit

## The core compiled with mypyc into ~/.cache/phalanx/core-mypyc/<source hash> (~1 min; reused
## until a core module changes). Prints the build directory.
core-compiled: $(STAMP)
	$(BIN)/python tools/build_core.py

## The unit tests of the core and of what drives it (simulator, adapter, views) again, against the
## compiled core (what the image ships): mypyc checks annotations at run time.
## The unit tests of everything that calls the core, against the mypyc-compiled core (the one the
## image ships), plus the check that it really is the compiled one. Deselected: one test that
## swaps a class through a module global — compiled code binds classes at build time, so there
## it would pass without testing anything; it runs in the pure run (test-unit).
test-core-compiled: $(STAMP)
	$(BIN)/python tools/build_core.py --exec \
		$(BIN)/pytest -q tests/compiled tests/unit/core tests/unit/sim tests/unit/k8s tests/unit/inspection \
		--deselect tests/unit/core/test_core_caches.py::test_forever_bound_only_skips_attempts_that_would_fail

test-integration: control-plane workload-controllers
	$(BIN)/pytest tests/integration -m integration

## All the tests: lint, unit tier, integration tier on the real local control plane.
test: lint test-unit test-core-compiled test-integration

## Copy crds/ into charts/phalanx/crds/ and render deploy/manifests/ from the chart (helm template).
sync-chart: control-plane
	$(BIN)/python -m phalanx.devcluster.chart

down: $(STAMP)
	$(BIN)/phalanx dev-cluster down

clean: down
	rm -rf $(VENV)

## Benchmarks (not part of `make test`); each writes bench/results/<name>.json.
bench-devcluster: control-plane
	$(BIN)/python bench/devcluster_bench.py

bench-core: $(STAMP)
	$(BIN)/python bench/core_bench.py

## Crash safety at length: 20 kill/restart rounds mid-gang; writes bench/results/chaos.json.
chaos: control-plane
	PHALANX_CHAOS_ROUNDS=20 PHALANX_CHAOS_RESULTS=bench/results/chaos.json \
		$(BIN)/pytest tests/integration/test_crash_safety.py -m integration -s

## Bind throughput and gang latency against a bare binding loop and kube-scheduler (large shape).
## The operator runs on the compiled core, as the image ships it (E2E_CORE=pure: the sources).
bench-e2e: control-plane
	if [ "$(E2E_CORE)" = pure ]; then $(BIN)/python bench/e2e_bench.py; \
	else $(BIN)/python tools/build_core.py --exec $(BIN)/python bench/e2e_bench.py; fi

## One cycle with 1,000 hostile PodGroups beside the large snapshot (bench/results/hostile.json).
bench-hostile: $(STAMP)
	$(BIN)/python bench/hostile_bench.py

## What one write of each kind costs the API server and etcd (CPU ms); bench/results/write_cost.json.
bench-write-cost: control-plane
	$(BIN)/python bench/write_cost.py

## Trace replays of the four policies (Philly, ITP); writes bench/results/sim.json and bench/SIM.md.
## Keeps recorded replays that match the current configuration; SIM_FLAGS= replays all (~2 h).
SIM_FLAGS ?= --reuse
bench-sim: $(STAMP)
	$(BIN)/python bench/sim_bench.py $(SIM_FLAGS)

## Side by side with kube-scheduler's own gang scheduling (Kubernetes 1.36 gates on) and, when
## VOLCANO_SCHEDULER names a vc-scheduler binary, Volcano (large shape, 3 alternating runs);
## writes bench/results/peers.json. PEERS_SHAPE=small for a quick look (peers-small.json).
bench-peers: control-plane
	$(BIN)/python tools/build_core.py --exec $(BIN)/python bench/peers_bench.py
