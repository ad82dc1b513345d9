#!/usr/bin/env bash
# make test's run (the Makefile passes GO, TEST_TIMEOUT, CLUSTER_TESTS and
# CLUSTER_PKGS): the browser tests' and nginx's dependencies, the services
# with a private Redis Cluster, every Go test with -race, then the cluster's
# tests again on the cluster. A cluster this run started is stopped on every
# exit, passed, failed or interrupted (a trap), so a failed run leaves no
# Redis nodes behind; one it found running (make bench's, say) is left as
# it was.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${GO:=go}" "${TEST_TIMEOUT:=15m}" "${CLUSTER_TESTS:?}" "${CLUSTER_PKGS:?}"
eval "$(scripts/e2e-deps.sh)"
eval "$(scripts/nginx-deps.sh)"
trap 'if [ "${REDIS_CLUSTER_STARTED:-0}" = 1 ]; then scripts/services.sh stop-cluster; fi' EXIT
eval "$(scripts/services.sh cluster)"
# shellcheck disable=SC2086 # CLUSTER_PKGS is a list of packages
"$GO" test -race -count=1 -timeout "$TEST_TIMEOUT" ./...
echo "on the Redis Cluster at $REDIS_CLUSTER_URL:"
REDIS_URL="$REDIS_CLUSTER_URL" "$GO" test -race -count=1 -timeout "$TEST_TIMEOUT" -run "$CLUSTER_TESTS" $CLUSTER_PKGS
