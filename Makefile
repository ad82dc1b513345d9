# boxoffice: the single entry point. `make run` and `make test` are all the
# set-up there is: they install and start what is missing (see README.md).
SHELL := /bin/bash
.DEFAULT_GOAL := help
GO ?= go
TEST_TIMEOUT ?= 15m
# the password of the demo accounts that make run creates on an empty database
DEMO_PASSWORD ?= boxoffice-demo
# the environment of the services (scripts/services.sh) and of the browser
# tests (scripts/e2e-deps.sh), as shell assignments to eval in a recipe
SERVICES = eval "$$(scripts/services.sh)"
E2E_DEPS = eval "$$(scripts/e2e-deps.sh)"
# the same services and a local 3-master Redis Cluster (REDIS_CLUSTER_URL),
# and nginx for the load-balancer test (scripts/nginx-deps.sh)
CLUSTER = eval "$$(scripts/services.sh cluster)"
NGINX_DEPS = eval "$$(scripts/nginx-deps.sh)"
# the tests that run a second time on the Redis Cluster: the store's
# concurrency tests of the queue, the admission and the holds, the session
# store, and whole sales with two instances, directly and behind nginx
CLUSTER_TESTS = TestQueue_|TestAdmitter_|TestHolds|TestSessions|TestChaos_TwoInstances|TestChaos_Nginx
CLUSTER_PKGS = ./store/ ./e2e/chaos/

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

.PHONY: generate
generate: ## generate the templ views (*_templ.go, not committed)
	@$(GO) tool templ generate -log-level error -path views

.PHONY: build
build: generate ## build bin/boxoffice
	$(GO) build -o bin/boxoffice ./web

.PHONY: run
run: build ## start PostgreSQL and Redis if needed, seed the demo on an empty database, serve the site
	@$(SERVICES) && ./bin/boxoffice seed-demo --password $(DEMO_PASSWORD) && exec ./bin/boxoffice serve

.PHONY: lint
lint: generate ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# -count=1: the browser, chaos and load tests build and run the binary
# themselves, which go test's cache cannot see, so a cached pass could hide
# a change to the binary.
.PHONY: test
test: lint ## vet, every Go test with -race, the browser tests, and the cluster's tests again on a Redis Cluster
	@GO='$(GO)' TEST_TIMEOUT='$(TEST_TIMEOUT)' CLUSTER_TESTS='$(CLUSTER_TESTS)' CLUSTER_PKGS='$(CLUSTER_PKGS)' scripts/test.sh

.PHONY: e2e
e2e: generate ## the browser tests alone
	@$(SERVICES) && $(E2E_DEPS) && $(GO) test -race -timeout $(TEST_TIMEOUT) -v -count=1 ./e2e/

# the long chaos tests run in every package but the browser tests' (which
# have none, and need Chromium)
CHAOS_PKGS = $$($(GO) list ./... | grep -v '/e2e$$')

.PHONY: chaos
chaos: generate ## the long version of every chaos test (TestChaos_ with BOXOFFICE_CHAOS=long, see README.md)
	@$(SERVICES) && BOXOFFICE_CHAOS=long $(GO) test -race -count=1 -run TestChaos_ -v -timeout 30m $(CHAOS_PKGS)

# flags of the load test, e.g. BENCH_FLAGS="-fans 2000 -quick", or
# BENCH_FLAGS="-redis-cluster -instances 2" for two instances behind nginx
# on the local Redis Cluster (see README.md)
BENCH_FLAGS ?=

.PHONY: bench
bench: build ## the load test: replay a sell-out against bin/boxoffice, report in bench-report/
	$(GO) build -o bin/loadtest ./e2e/loadtest
	@$(CLUSTER) && $(NGINX_DEPS) && ./bin/loadtest $(BENCH_FLAGS)

.PHONY: bench-sse
bench-sse: build ## the load test's SSE mode: 10,000 streams on one instance, report in bench-report/
	$(GO) build -o bin/loadtest ./e2e/loadtest
	@$(SERVICES) && ./bin/loadtest -mode sse $(BENCH_FLAGS)

.PHONY: stop
stop: ## stop the private PostgreSQL, Redis and Redis Cluster that make run or make test started
	@if [ -f .data/postgres/db/postmaster.pid ]; then runuser -u postgres -- $$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)/pg_ctl -D .data/postgres/db stop -m fast 2>/dev/null || pg_ctl -D .data/postgres/db stop -m fast; fi
	@if [ -f .data/redis/redis.pid ]; then kill $$(cat .data/redis/redis.pid) 2>/dev/null || true; fi
	@scripts/services.sh stop-cluster

.PHONY: vendor
vendor: ## re-fetch htmx, its SSE extension and Pico CSS from npm at the pinned versions
	scripts/vendor.sh
