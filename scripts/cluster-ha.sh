#!/usr/bin/env bash
# Runs the service on a database that survives the loss of its primary, on this machine: a pg_auto_failover monitor,
# a primary and a synchronous standby (each a pg_autoctl keeper with its Postgres), WAL archived continuously with
# pgBackRest, CLUSTER_PROCESSES server processes reaching the database through a multi-host URL, and HAProxy
# balancing them with health checks on /health/ready. Stays in the foreground; Ctrl-C or SIGTERM stops everything it
# started (and nothing else).
#
#   scripts/cluster-ha.sh                 (or: npm run cluster -- --ha)
#
# No PgBouncer here: PgBouncer 1.x names one server per database and cannot tell a primary from a standby, so after
# a failover it would keep sending writes to the old primary's address. The server processes instead list both
# nodes in DATABASE_URL with target_session_attrs=read-write (postgres.js tries the hosts in turn and keeps the one
# that takes writes) and follow a promotion by reconnecting.
#
# Environment (all optional):
#   CLUSTER_PORT             HAProxy's public port (8080)
#   CLUSTER_SERVER_PORTS     the servers' ports, space-separated ("3001 3002")
#   CLUSTER_MONITOR_PORT     the monitor's Postgres port (6000)
#   CLUSTER_NODE_PORTS       the two nodes' Postgres ports, space-separated ("6001 6002")
#   CLUSTER_DB               the application database (fos)
#   CLUSTER_DIR              data directories, configuration, logs and pid files (a fresh temporary directory)
#   CLUSTER_SERVERS          0: only the database layout (monitor, nodes, archiving), no server processes or HAProxy
#   CLUSTER_STOP_ON_EOF      1: also stop when standard input closes (a parent that dies takes the cluster along)
# Anything else in the environment (SUPERADMIN_*, RATE_LIMIT_*, …) reaches every server process.
# Once everything answers, prints `cluster ready <url> <dir> <database url>`.
#
# Subcommands on a running cluster's directory (for drills, tests and the failover bench):
#   scripts/cluster-ha.sh primary DIR      prints the node number (1 or 2) whose Postgres takes writes
#   scripts/cluster-ha.sh kill DIR N       kill -9 node N: its keeper and its Postgres, like a machine lost
#   scripts/cluster-ha.sh stop DIR N       stops node N cleanly (pg_autoctl stop: keeper and Postgres), for maintenance
#   scripts/cluster-ha.sh start DIR N      starts node N's keeper again; it rejoins as a standby (pg_rewind)
#   scripts/cluster-ha.sh healthy DIR      waits until one node is primary and the other a synchronous standby
#   scripts/cluster-ha.sh backup DIR       a full pgBackRest backup taken from the current primary
#   scripts/cluster-ha.sh archived DIR     switches to a new WAL file and waits until the finished one is archived
#   scripts/cluster-ha.sh restore DIR TIME PORT
#                                          restores the latest backup plus archived WAL up to TIME (a timestamptz)
#                                          into DIR/restore-PORT, a fresh instance of its own on PORT, and waits
#                                          until it has been promoted; stopped with the cluster
#   scripts/cluster-ha.sh autoctl DIR ARGS pg_autoctl ARGS as the postgres user, against node 1's keeper
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/balanced.sh

PGBIN=/usr/lib/postgresql/15/bin
# The postgres user cannot read some directories root keeps on its PATH, and pg_autoctl looks for pg_ctl along it.
export PATH=$PGBIN:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
STANZA=fos

# Everything pg_autoctl keeps (its configuration, state and pid files) lives under the cluster's directory, never
# in the postgres user's home, so two clusters on one machine do not see each other.
as_postgres() {
  runuser -u postgres -- env PATH="$PATH" XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" \
    XDG_RUNTIME_DIR="$DIR/xdg/run" PGBACKREST_CONFIG="$DIR/pgbackrest.conf" "$@"
}
node_port() { cat "$DIR/node-$1.port"; }
# psql on a node as the postgres superuser, over TCP (pg_autoctl's HBA rules trust 127.0.0.1 for everyone).
node_sql() { psql -X -h 127.0.0.1 -p "$(node_port "$1")" -U postgres -d "${3:-postgres}" -Atqc "$2"; }

primary_of() {
  local n
  for n in 1 2; do
    if [ "$(node_sql "$n" 'select not pg_is_in_recovery()' 2>/dev/null)" = t ]; then
      echo "$n"
      return 0
    fi
  done
  return 1
}

# The keeper of node N in a session of its own, so its pid is the group of everything it starts but Postgres's
# backends (each makes its own group); pgBackRest learns from the environment which data directory is this node's.
start_node() {
  local n=$1
  shift
  (
    cd "$DIR"
    exec setsid runuser -u postgres -- env PATH="$PATH" XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" \
      XDG_RUNTIME_DIR="$DIR/xdg/run" PGBACKREST_CONFIG="$DIR/pgbackrest.conf" PGBACKREST_PG1_PATH="$DIR/node-$n" \
      PGBACKREST_PG1_PORT="$(node_port "$n")" pg_autoctl "$@"
  ) >>"$DIR/node-$n.log" 2>&1 &
  echo $! >"$DIR/node-$n.pid"
}

# Every process of node N: the keeper's group, its Postgres and that Postgres's children, by their ids.
node_pids() {
  local n=$1 pgid postmaster
  pgid=$(cat "$DIR/node-$n.pid" 2>/dev/null || true)
  if [ -n "$pgid" ]; then pgrep -g "$pgid" || true; fi
  postmaster=$(head -n 1 "$DIR/node-$n/postmaster.pid" 2>/dev/null || true)
  if [ -n "$postmaster" ] && kill -0 "$postmaster" 2>/dev/null; then
    echo "$postmaster"
    pgrep -P "$postmaster" || true
  fi
}

kill_node() {
  local pids
  pids=$(node_pids "$1" | sort -u | tr '\n' ' ')
  if [ -n "$pids" ]; then kill -KILL $pids 2>/dev/null || true; fi
}

backup() {
  local p
  p=$(primary_of)
  as_postgres pgbackrest --stanza=$STANZA --pg1-path="$DIR/node-$p" --pg1-port="$(node_port "$p")" --type=full backup
}

# Every WAL file written so far is in the archive: what a point-in-time restore up to now needs.
archived() {
  local p wal
  p=$(primary_of)
  wal=$(node_sql "$p" "select pg_walfile_name(pg_switch_wal())")
  for _ in $(seq 1 300); do
    [ "$(node_sql "$p" "select coalesce(last_archived_wal >= '$wal', false) from pg_stat_archiver")" = t ] && return 0
    sleep 0.1
  done
  echo "cluster-ha: $wal was not archived within 30 s (see $DIR/pgbackrest)" >&2
  return 1
}

# A fresh instance from the backup and the archive, recovered up to TIME then promoted. The copied configuration is
# the primary's: its port, its synchronous standby (which would hold every commit) and its archiving (which would
# write this instance's WAL into the cluster's archive) are overridden on the command line.
restore() {
  local time=$1 port=$2 target="$DIR/restore-$2"
  mkdir -p "$target"
  chown postgres:postgres "$target"
  chmod 700 "$target"
  as_postgres pgbackrest --stanza=$STANZA --pg1-path="$target" --type=time --target="$time" --target-action=promote restore
  as_postgres pg_ctl -D "$target" -l "$target.log" -w -t 120 \
    -o "-p $port -c listen_addresses=127.0.0.1 -c synchronous_standby_names= -c archive_mode=off -c logging_collector=off" start >/dev/null
  for _ in $(seq 1 600); do
    [ "$(psql -X -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atqc 'select pg_is_in_recovery()' 2>/dev/null)" = f ] && return 0
    sleep 0.1
  done
  echo "cluster-ha: the restored instance did not leave recovery; its log: $target.log" >&2
  return 1
}

healthy() {
  local port states
  port=$(cat "$DIR/monitor.port")
  for _ in $(seq 1 1200); do
    states=$(psql -X -h 127.0.0.1 -p "$port" -U postgres -d pg_auto_failover -Atqc \
      "select string_agg(reportedstate::text || '/' || goalstate::text || '/' || health, ' ' order by reportedstate) from pgautofailover.node" 2>/dev/null || true)
    # The monitor's own health check must have seen both: it does not promote a standby it has not found healthy.
    [ "$states" = "primary/primary/1 secondary/secondary/1" ] && return 0
    sleep 0.1
  done
  echo "cluster-ha: not healthy after 120 s: $states" >&2
  return 1
}

case "${1:-}" in
primary | kill | stop | start | healthy | backup | archived | restore | autoctl)
  DIR=${2:?cluster directory}
  case $1 in
  primary) primary_of ;;
  kill) kill_node "${3:?node number}" ;;
  stop)
    as_postgres pg_autoctl stop --pgdata "$DIR/node-${3:?node number}"
    for _ in $(seq 1 300); do [ -z "$(node_pids "$3")" ] && break; sleep 0.1; done
    ;;
  start) start_node "${3:?node number}" run --pgdata "$DIR/node-$3" ;;
  healthy) healthy ;;
  backup) backup ;;
  archived) archived ;;
  restore) restore "${3:?target time}" "${4:?port}" ;;
  autoctl) shift 2; as_postgres pg_autoctl "$@" --pgdata "$DIR/node-1" ;;
  esac
  exit 0
  ;;
--ha | "") ;;
*)
  echo "cluster-ha: unknown command $1" >&2
  exit 2
  ;;
esac

for bin in /usr/bin/pg_autoctl /usr/bin/pgbackrest $PGBIN/postgres; do
  if [ ! -x "$bin" ]; then
    echo "cluster-ha: $bin is missing (Debian: apt-get install postgresql-15-auto-failover pgbackrest)" >&2
    exit 3
  fi
done
SERVERS=${CLUSTER_SERVERS:-1}
if [ "$SERVERS" != 0 ] && ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
  echo "cluster-ha: haproxy is not installed (Debian: apt-get install haproxy)" >&2
  exit 3
fi
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
BUN=${BUN:-$(command -v bun || echo node_modules/.bin/bun)}

PORT=${CLUSTER_PORT:-8080}
MONITOR_PORT=${CLUSTER_MONITOR_PORT:-6000}
read -r -a NODE_PORTS <<<"${CLUSTER_NODE_PORTS:-6001 6002}"
read -r -a SERVER_PORTS <<<"${CLUSTER_SERVER_PORTS:-3001 3002}"
DB=${CLUSTER_DB:-fos}
DIR=${CLUSTER_DIR:-$(mktemp -d /tmp/fos-cluster-ha.XXXXXX)}
mkdir -p "$DIR"/xdg/{config,data,run} "$DIR/pgbackrest-repo" "$DIR/pgbackrest"
chmod 755 "$DIR"
chmod 700 "$DIR/xdg/run"
chown -R postgres:postgres "$DIR"

HAPROXY_PID=""
SERVER_PIDS=()
MONITOR_PID=""
halt() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# The balancer, the servers, then the keepers (a keeper stopped with TERM stops its Postgres), the monitor last.
# Whatever is still alive after that (a keeper that hung) is killed by its recorded ids.
stop() {
  trap - EXIT INT TERM
  [ -n "$HAPROXY_PID" ] && halt "$HAPROXY_PID"
  [ ${#SERVER_PIDS[@]} -gt 0 ] && halt "${SERVER_PIDS[@]}"
  local n pids
  for n in 1 2; do
    [ -f "$DIR/node-$n.pid" ] && kill -TERM -- "-$(cat "$DIR/node-$n.pid")" 2>/dev/null || true
  done
  [ -n "$MONITOR_PID" ] && kill -TERM -- "-$MONITOR_PID" 2>/dev/null || true
  local restored
  for restored in "$DIR"/restore-*/postmaster.pid; do
    [ -f "$restored" ] && as_postgres pg_ctl -D "${restored%/postmaster.pid}" -m immediate stop >/dev/null 2>&1 || true
  done
  for _ in $(seq 1 100); do
    pids=$( (node_pids 1; node_pids 2; [ -n "$MONITOR_PID" ] && pgrep -g "$MONITOR_PID") 2>/dev/null || true)
    [ -z "$pids" ] && break
    sleep 0.1
  done
  for n in 1 2; do kill_node "$n"; done
  if [ -n "$MONITOR_PID" ]; then
    pids=$(pgrep -g "$MONITOR_PID" | tr '\n' ' ' || true)
    local mpm
    mpm=$(head -n 1 "$DIR/monitor/postmaster.pid" 2>/dev/null || true)
    [ -n "$mpm" ] && pids+=" $mpm $(pgrep -P "$mpm" | tr '\n' ' ')"
    [ -n "${pids// /}" ] && kill -KILL $pids 2>/dev/null || true
  fi
  return 0
}
trap stop EXIT
trap 'exit 0' INT TERM
if [ "${CLUSTER_STOP_ON_EOF:-}" = 1 ]; then
  (cat >/dev/null; kill -TERM $$ 2>/dev/null) <&0 &
fi

echo "$MONITOR_PORT" >"$DIR/monitor.port"
echo "${NODE_PORTS[0]}" >"$DIR/node-1.port"
echo "${NODE_PORTS[1]}" >"$DIR/node-2.port"

# pgBackRest's repository and settings; each node's data directory and port come from its keeper's environment
# (PGBACKREST_PG1_PATH, PGBACKREST_PG1_PORT), so the same archive_command works on whichever node is primary.
cat >"$DIR/pgbackrest.conf" <<EOF
[global]
repo1-path=$DIR/pgbackrest-repo
repo1-retention-full=2
log-path=$DIR/pgbackrest
lock-path=$DIR/pgbackrest
log-level-console=warn
log-level-file=info
start-fast=y
compress-type=lz4
EOF
chown postgres:postgres "$DIR/pgbackrest.conf"

# The monitor. Its health checks are tuned for a failover within seconds rather than the defaults' half a minute:
# a node is checked every second with a one-second timeout, counted unhealthy once it has failed checks for 3 s,
# and a primary that cannot reach the monitor demotes itself after 2 s (so it never writes beside a promoted
# standby). Synchronous replication keeps this safe: the standby has every acknowledged commit.
(
  cd "$DIR"
  exec setsid runuser -u postgres -- env PATH="$PATH" XDG_CONFIG_HOME="$DIR/xdg/config" XDG_DATA_HOME="$DIR/xdg/data" \
    XDG_RUNTIME_DIR="$DIR/xdg/run" pg_autoctl create monitor --pgdata "$DIR/monitor" --pgport "$MONITOR_PORT" \
    --hostname 127.0.0.1 --listen 127.0.0.1 --auth trust --no-ssl --run
) >"$DIR/monitor.log" 2>&1 &
MONITOR_PID=$!
deadline=$((SECONDS + 60))
until psql -X -h 127.0.0.1 -p "$MONITOR_PORT" -U autoctl_node -d pg_auto_failover -Atqc 'select 1' >/dev/null 2>&1; do
  if ((SECONDS > deadline)); then echo "cluster-ha: the monitor did not start; its log:" >&2; tail -n 20 "$DIR/monitor.log" >&2; exit 1; fi
  sleep 0.3
done
psql -X -h 127.0.0.1 -U postgres -p "$MONITOR_PORT" -d pg_auto_failover -q \
  -c "alter system set pgautofailover.health_check_period = 1000" \
  -c "alter system set pgautofailover.health_check_timeout = 1000" \
  -c "alter system set pgautofailover.health_check_max_retries = 1" \
  -c "alter system set pgautofailover.health_check_retry_delay = 500" \
  -c "alter system set pgautofailover.node_considered_unhealthy_timeout = 3000" \
  -c "alter system set pgautofailover.primary_demote_timeout = 2000" \
  -c "select pg_reload_conf()" >/dev/null
MONITOR_URI="postgres://autoctl_node@127.0.0.1:$MONITOR_PORT/pg_auto_failover?sslmode=disable"

create_node() {
  local n=$1
  start_node "$n" create postgres --pgdata "$DIR/node-$n" --pgport "$(node_port "$n")" --hostname 127.0.0.1 \
    --listen 127.0.0.1 --name "node$n" --dbname "$DB" --monitor "$MONITOR_URI" --auth trust --no-ssl --run
}
wait_state() {
  local n=$1 want=$2 deadline=$((SECONDS + 120))
  until [ "$(psql -X -h 127.0.0.1 -U postgres -p "$MONITOR_PORT" -d pg_auto_failover -Atqc \
    "select reportedstate from pgautofailover.node where nodename = 'node$n'" 2>/dev/null)" = "$want" ]; do
    if ((SECONDS > deadline)); then echo "cluster-ha: node $n did not reach $want; its log:" >&2; tail -n 20 "$DIR/node-$n.log" >&2; exit 1; fi
    sleep 0.3
  done
}

# The first node's data directory is made here rather than by pg_autoctl, so what needs a restart is in place from
# the first start: WAL goes to pgBackRest as it fills (archive_timeout bounds how old the last archived commit can
# be), and memory sized for a machine that runs three Postgres instances and the service (pg_autoctl would size
# shared_buffers for Postgres alone). postgresql.auto.conf comes last and is cloned to the standby with the data.
as_postgres initdb -D "$DIR/node-1" --auth=trust --username=postgres --encoding=UTF8 --locale=C.UTF-8 >"$DIR/initdb.log"
cat >>"$DIR/node-1/postgresql.auto.conf" <<EOF
archive_mode = on
archive_command = 'pgbackrest --stanza=$STANZA archive-push %p'
archive_timeout = '60s'
shared_buffers = '256MB'
effective_cache_size = '1GB'
maintenance_work_mem = '64MB'
work_mem = '8MB'
EOF
create_node 1
wait_state 1 single
as_postgres pgbackrest --stanza=$STANZA --pg1-path="$DIR/node-1" --pg1-port="$(node_port 1)" stanza-create >>"$DIR/pgbackrest.log" 2>&1
create_node 2
# The standby is cloned with pg_basebackup, which waits for a checkpoint; a spread one would take minutes.
until [ -f "$DIR/node-2/PG_VERSION" ] || grep -q 'pg_basebackup: checkpoint completed' "$DIR/node-2.log" 2>/dev/null; do
  node_sql 1 checkpoint >/dev/null 2>&1 || true
  sleep 1
done
wait_state 2 secondary
wait_state 1 primary
as_postgres pgbackrest --stanza=$STANZA --pg1-path="$DIR/node-1" --pg1-port="$(node_port 1)" check >>"$DIR/pgbackrest.log" 2>&1

DATABASE_URL="postgres://postgres@127.0.0.1:${NODE_PORTS[0]},127.0.0.1:${NODE_PORTS[1]}/$DB?target_session_attrs=read-write"
echo "$DATABASE_URL" >"$DIR/database-url"

if [ "$SERVERS" = 0 ]; then
  echo "cluster ready - $DIR $DATABASE_URL"
  wait "$MONITOR_PID"
  exit 0
fi

# Statement exports and audit verification read from the standby while there is one (DATABASE_READ_URL).
DATABASE_READ_URL="postgres://postgres@127.0.0.1:${NODE_PORTS[0]},127.0.0.1:${NODE_PORTS[1]}/$DB?target_session_attrs=prefer-standby"
export DATABASE_URL DATABASE_READ_URL
export_server_env
start_servers "${SERVER_PORTS[@]}"
# As scripts/cluster.sh. A failover makes every process answer /health/ready 503 for a few seconds at once, so
# HAProxy takes them all out of rotation; the answer clients then get is the one the processes would have given
# (503 SERVICE_UNAVAILABLE with Retry-After, HAProxy's errorfile in scripts/balanced.sh), never HAProxy's own
# page, and every process is back in rotation within 0.2 s of the new primary taking its writes. Open kiosk
# streams are not cut meanwhile. What this gains over keeping not-ready processes in rotation: a process that
# alone lost its way to the primary gets no requests while the others serve them.
start_haproxy
wait_ready cluster-ha "${SERVER_PORTS[@]}"
echo "cluster ready http://127.0.0.1:$PORT $DIR $DATABASE_URL"
wait "$HAPROXY_PID" "${SERVER_PIDS[@]}"
