# berth: the two commands the README opens with are `make run` and `make test`.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM ?= npm
BERTH := node bin/berth.js
# The Node.js every target uses (scripts/node-up.sh): .node/bin/node, the machine's own when it is
# >= 22.22, else a maintained release installed into .node/ from the npm registry.
export PATH := $(CURDIR)/.node/bin:$(PATH)
# The maintained lines the unit tests also run on in `make test` (besides the one berth uses),
# installed by `make deps` (scripts/node-up.sh --lines): nothing is downloaded in the test phase.
NODE_LINES ?= 22 24 26

.PHONY: help node node-lines deps build engine engines git fs registry packages images browser clients setup run test test-unit test-lines test-engines lint typecheck bench bench-sets clean-engine

help:
	@echo "make run    reconcile the example specs in specs/ on the local engine, then show them"
	@echo "make test   install, start the engine, build the test images, typecheck, lint and run every test"
	@echo "make bench  benchmark berth against the raw engine and its peers (see BENCHMARKS.md)"
	@echo "make test-engines  the whole compatibility matrix: the engine suites on Docker 20.10, 26.1, 28.5 and 28.5 with the containerd image store"

node:
	@./scripts/node-up.sh

node-lines: node
	@./scripts/node-up.sh --lines $(NODE_LINES)

# Installed again when the Node changes (the link is newer than the install).
node_modules/.package-lock.json: package.json package-lock.json .node/bin/node
	$(NPM) ci --no-audit --no-fund
	@touch $@

.node/bin/node:
	@./scripts/node-up.sh

deps: node node-lines node_modules/.package-lock.json

build: deps
	$(NPM) run build

engine:
	./scripts/engine-up.sh

images: deps engine
	./scripts/images.sh

# the system git: specs from git (--git) and its tests (git daemon, git http-backend, an sshd the ssh test starts)
git:
	./scripts/git-up.sh

# Debian's xfsprogs and btrfs-progs: the disk-limit tests (xfs and btrfs data roots of private engines on loop devices)
fs:
	./scripts/fs-up.sh

# The newer engines of the compatibility matrix (Debian trixie's and forky's docker.io), each a root
# debootstrapped once into $BERTH_ENGINES_DIR (default /var/cache/berth/engines) and kept (scripts/engines-up.sh)
engines:
	./scripts/engines-up.sh

# Debian's docker-registry, skopeo and apache2-utils: the registry tests' real registry (test/support/registry.ts)
registry:
	./scripts/registry-up.sh

# every Debian package the tests need, in one apt run (make test runs it first)
packages:
	./scripts/packages-up.sh

# curl and python3: the API's clients in the tests (scripts/clients-up.sh)
clients:
	./scripts/clients-up.sh

setup: deps build images git fs engines registry clients

# Debian's chromium for the report's browser tests and `make bench` (scripts/browser-up.sh; no browser download)
browser:
	./scripts/browser-up.sh

# reconcile --wait ends with the `berth get` table
run: setup
	$(BERTH) reconcile --specs specs --once --wait --fail-on infra

# Every test, three jobs at once (scripts/test-lanes.mjs: the engine lanes main and side, and the
# unit tests on each Node line); its last lines give each job's time and the run's.
# On a fresh machine: every Debian package in one apt run (scripts/packages-up.sh), then the
# engine roots of the compatibility matrix debootstrapped (scripts/engines-up.sh, minutes of
# download and unpacking) beside the rest of the setup (npm ci, the Node lines, the images),
# waited for before the tests; its output comes after the setup's.
test: export BERTH_MAKE_T0 := $(shell date +%s)
test: packages
	@./scripts/engines-up.sh > .engines-up.log 2>&1 & e=$$!; \
	  $(MAKE) --no-print-directory deps build images git fs registry browser; s=$$?; \
	  wait $$e; r=$$?; cat .engines-up.log; rm -f .engines-up.log; \
	  [ $$s -eq 0 ] && [ $$r -eq 0 ] || { echo "make test: the setup failed (setup $$s, engine roots $$r)" >&2; exit 1; }
	NODE_LINES="$(NODE_LINES)" $(NPM) test

# The whole compatibility matrix (README, "Engines"): the contract, lifecycle, trust, disk and isolation
# suites on each engine in turn (scripts/test-engines.ts; ENGINES=e20,e26,e28,e28c and FILES=... narrow it).
# Run before every release; `make test` runs its fast part (test/engine/engines.test.ts).
test-engines: setup
	node --import tsx scripts/test-engines.ts

test-unit: deps
	$(NPM) run test:unit

# The unit tests on every other maintained line of Node.js (the whole suite ran on berth's own).
test-lines: deps
	./scripts/test-lines.sh $(NODE_LINES)

lint: deps
	$(NPM) run lint

typecheck: deps
	$(NPM) run typecheck

# tsx's cache off: with it on, tsx prunes its cache folder in the background of the run (thousands
# of async folder reads on a machine that has run tsx a lot), inside berth's timed awaits only
bench: setup browser
	./scripts/bench-deps.sh
	TSX_DISABLE_CACHE=1 node --import tsx bench/run.ts

# An AttemptSet of 10,000 children: plan cost (CLI, cold) and engine calls of a pass (bench/sets.ts)
bench-sets: setup
	node --import tsx bench/sets.ts
