#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer, and prints the DATABASE_URL and
# REDIS_URL to use as shell assignments (the Makefile evals them). With the
# argument "cluster" it also makes sure a local 3-master Redis Cluster answers
# and prints its URL as REDIS_CLUSTER_URL (the tests that run on a cluster
# read it), and REDIS_CLUSTER_STARTED=1 when this call started it (0 when it
# reused one), so that the caller can stop what it started
# (scripts/services.sh stop-cluster; scripts/test.sh does on every exit).
#
# For each service: if something answers at the configured address (the
# defaults are 127.0.0.1:5432 and 127.0.0.1:6379), it is used. Otherwise, if
# the server programs are installed, a private instance is started under
# .data/ on a free port (and reused by later runs). If they are missing and
# this is a Debian-like machine where we are root, they are installed with
# apt-get. Otherwise it stops with one sentence naming what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA="$PWD/.data"
DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/boxoffice?sslmode=disable}"
REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379/0}"

say() { echo "services: $*" >&2; }

# answers HOST PORT: true if something accepts TCP connections there.
answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    answers 127.0.0.1 "$p" || { echo "$p"; return; }
  done
  say "no free port found"; exit 1
}

can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }

apt_install() {
  say "installing $* with apt-get"
  if ! { apt-get install -y -qq --no-install-recommends "$@" || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; }; } >&2; then
    say "apt-get could not install $*"; exit 1
  fi
}

# host_port URL: prints "host port" of a postgres:// or redis:// URL.
host_port() {
  local rest=${1#*://}
  rest=${rest#*@}
  rest=${rest%%/*}
  local host=${rest%%:*} port=${rest##*:}
  [ "$port" = "$rest" ] && port=$2
  echo "$host $port"
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

ensure_postgres() {
  read -r host port < <(host_port "$DATABASE_URL" 5432)
  if answers "$host" "$port"; then say "using the PostgreSQL that answers at $host:$port (DATABASE_URL)"; return; fi
  if [ -f "$DATA/postgres/port" ] && answers 127.0.0.1 "$(cat "$DATA/postgres/port")"; then
    DATABASE_URL="postgres://postgres@127.0.0.1:$(cat "$DATA/postgres/port")/boxoffice?sslmode=disable"; return
  fi
  if [ -z "$(pg_bin)" ]; then
    can_apt || { say "PostgreSQL does not answer at $host:$port and is not installed: install PostgreSQL 15 or newer (the postgresql package)"; exit 1; }
    apt_install postgresql
  fi
  local bin; bin=$(pg_bin)
  local dir="$DATA/postgres" run=()
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; run=(runuser -u postgres --); fi
  if [ ! -f "$dir/db/PG_VERSION" ]; then
    say "initialising a private PostgreSQL in $dir/db"
    "${run[@]}" "$bin/initdb" -D "$dir/db" -U postgres -A trust >/dev/null
  fi
  port=$(free_port)
  say "starting a private PostgreSQL on 127.0.0.1:$port"
  # pg_stat_statements (shipped with the server) keeps each statement's
  # calls and times, for finding where a load test's time goes (README,
  # Performance); it costs a hash update per statement.
  local opts="-p $port -c listen_addresses=127.0.0.1 -k $dir"
  [ -f "$(dirname "$bin")/lib/pg_stat_statements.so" ] && opts="$opts -c shared_preload_libraries=pg_stat_statements"
  "${run[@]}" "$bin/pg_ctl" -D "$dir/db" -l "$dir/log" -w -o "$opts" start >/dev/null
  echo "$port" >"$dir/port"
  DATABASE_URL="postgres://postgres@127.0.0.1:$port/boxoffice?sslmode=disable"
}

ensure_redis() {
  read -r host port < <(host_port "$REDIS_URL" 6379)
  if answers "$host" "$port"; then say "using the Redis that answers at $host:$port (REDIS_URL)"; return; fi
  if [ -f "$DATA/redis/port" ] && answers 127.0.0.1 "$(cat "$DATA/redis/port")"; then
    REDIS_URL="redis://127.0.0.1:$(cat "$DATA/redis/port")/0"; return
  fi
  if ! command -v redis-server >/dev/null; then
    can_apt || { say "Redis does not answer at $host:$port and is not installed: install Redis 7 (the redis-server package)"; exit 1; }
    apt_install redis-server
  fi
  mkdir -p "$DATA/redis"
  port=$(free_port)
  say "starting a private Redis on 127.0.0.1:$port"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$DATA/redis/redis.pid" --dir "$DATA/redis" --logfile "$DATA/redis/log" >/dev/null
  for _ in $(seq 1 50); do answers 127.0.0.1 "$port" && break; sleep 0.1; done
  echo "$port" >"$DATA/redis/port"
  REDIS_URL="redis://127.0.0.1:$port/0"
}

# cluster_ok PORT: true if the node at PORT says the cluster is ok.
cluster_ok() { redis-cli -p "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

# ensure_cluster: a private Redis Cluster of 3 masters (no replicas) under
# .data/cluster, each node on a free port whose cluster bus port (+10000) is
# free too, both below the kernel's ephemeral ports (32768 and up, where an
# outgoing connection may hold a port that nothing listens on); reused by
# later runs while every node answers and it is ok.
ensure_cluster() {
  local dir="$DATA/cluster" ports=() p
  if [ -f "$dir/ports" ]; then
    read -r -a ports <"$dir/ports"
    local ok=1
    for p in "${ports[@]}"; do cluster_ok "$p" || ok=0; done
    if [ "$ok" = 1 ] && [ "${#ports[@]}" = 3 ]; then cluster_url "${ports[@]}"; CLUSTER_STARTED=0; return; fi
    stop_cluster
  fi
  command -v redis-server >/dev/null || { can_apt || { say "redis-server is not installed: install Redis 7 (the redis-server package)"; exit 1; }; apt_install redis-server; }
  ports=()
  while [ "${#ports[@]}" -lt 3 ]; do
    p=$((20000 + RANDOM % 2700))
    answers 127.0.0.1 "$p" || answers 127.0.0.1 $((p + 10000)) || [[ " ${ports[*]} " == *" $p "* ]] || ports+=("$p")
  done
  say "starting a private 3-master Redis Cluster on 127.0.0.1:${ports[*]}"
  for p in "${ports[@]}"; do
    mkdir -p "$dir/$p"
    redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --pidfile "$dir/$p/redis.pid" --dir "$dir/$p" --logfile "$dir/$p/log" >/dev/null
  done
  for p in "${ports[@]}"; do
    for _ in $(seq 1 50); do answers 127.0.0.1 "$p" && break; sleep 0.1; done
  done
  local addrs=()
  for p in "${ports[@]}"; do addrs+=("127.0.0.1:$p"); done
  redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$dir/create.log" 2>&1 \
    || { say "redis-cli --cluster create failed: $(tr '\n' ' ' <"$dir/create.log")"; stop_cluster; exit 1; }
  for _ in $(seq 1 100); do
    local ok=1
    for p in "${ports[@]}"; do cluster_ok "$p" || ok=0; done
    [ "$ok" = 1 ] && break
    sleep 0.1
  done
  echo "${ports[*]}" >"$dir/ports"
  cluster_url "${ports[@]}"
  CLUSTER_STARTED=1
}

# stop_cluster: stops the private cluster's nodes and forgets them.
# stop_cluster stops the private cluster's nodes and removes their folder,
# once each node has exited: a node writes its files (nodes.conf, its log)
# as it shuts down, and removing the folder meanwhile fails with "Directory
# not empty" (seen once at the end of a make test that had passed).
stop_cluster() {
  local f pid pids=()
  for f in "$DATA"/cluster/*/redis.pid; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    kill "$pid" 2>/dev/null && pids+=("$pid") || true
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$DATA/cluster"
}

cluster_url() { REDIS_CLUSTER_URL="redis://127.0.0.1:$1?addr=127.0.0.1:$2&addr=127.0.0.1:$3"; }

case "${1:-}" in
stop-cluster) stop_cluster; exit 0 ;;
esac
ensure_postgres
ensure_redis
if [ "${1:-}" = cluster ]; then
  ensure_cluster
  echo "export DATABASE_URL='$DATABASE_URL' REDIS_URL='$REDIS_URL' REDIS_CLUSTER_URL='$REDIS_CLUSTER_URL' REDIS_CLUSTER_STARTED=$CLUSTER_STARTED"
else
  echo "export DATABASE_URL='$DATABASE_URL' REDIS_URL='$REDIS_URL'"
fi
