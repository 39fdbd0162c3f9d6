#!/usr/bin/env bash
# Runs the service as it is deployed past one process, on this machine: PgBouncer (transaction pooling) in front of
# Postgres, CLUSTER_PROCESSES server processes, and HAProxy balancing them with health checks on /health/ready.
# Stays in the foreground; Ctrl-C or SIGTERM stops everything it started (and nothing else).
#
#   DATABASE_URL=postgres://postgres@127.0.0.1:5432/fos scripts/cluster.sh
#
# Environment (all optional):
#   DATABASE_URL            the Postgres database itself (default postgres://postgres@127.0.0.1:5432/fos; created if missing)
#   CLUSTER_PORT            HAProxy's public port (8080)
#   CLUSTER_PGBOUNCER_PORT  PgBouncer's port (6432)
#   CLUSTER_SERVER_PORT     first server's port; the others follow (3001)
#   CLUSTER_SERVER_PORTS    the servers' ports as a space-separated list, instead of CLUSTER_SERVER_PORT
#   CLUSTER_PROCESSES       server processes (3)
#   CLUSTER_POOL_SIZE       PgBouncer server connections per database and user (20)
#   CLUSTER_PG_SOCKET_DIR   where a Postgres on this host keeps its Unix socket, used when it answers (/var/run/postgresql)
#   CLUSTER_DIR             configuration, logs and pid files (a fresh temporary directory)
#   CLUSTER_STOP_ON_EOF     1: also stop when standard input closes (a parent that dies takes the cluster along)
# Anything else in the environment (SUPERADMIN_*, RATE_LIMIT_*, S3_*, …) reaches every server process.
# Once everything answers, prints `cluster ready <url> <dir>`; `<dir>/server-<n>.pid` hold the server pids.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/balanced.sh

for bin in pgbouncer haproxy; do
  if ! command -v "$bin" >/dev/null && [ ! -x "/usr/sbin/$bin" ]; then
    echo "cluster: $bin is not installed (Debian: apt-get install $bin)" >&2
    exit 3
  fi
done
PGBOUNCER=$(command -v pgbouncer || echo /usr/sbin/pgbouncer)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)
BUN=${BUN:-$(command -v bun || echo node_modules/.bin/bun)}

DB_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/fos}
PORT=${CLUSTER_PORT:-8080}
PGB_PORT=${CLUSTER_PGBOUNCER_PORT:-6432}
SERVER_PORT=${CLUSTER_SERVER_PORT:-3001}
PROCESSES=${CLUSTER_PROCESSES:-3}
POOL_SIZE=${CLUSTER_POOL_SIZE:-20}
DIR=${CLUSTER_DIR:-$(mktemp -d /tmp/fos-cluster.XXXXXX)}
mkdir -p "$DIR"
chmod 755 "$DIR"

# postgres://user[:password]@host:port/db → its parts; PgBouncer reaches the same server the same way.
re='^postgres(ql)?://([^:@/]+)(:([^@/]*))?@([^:/]+)(:([0-9]+))?/([^?]+)'
if [[ ! $DB_URL =~ $re ]]; then
  echo "cluster: DATABASE_URL must look like postgres://user[:password]@host[:port]/database" >&2
  exit 2
fi
PG_USER=${BASH_REMATCH[2]}
PG_PASSWORD=${BASH_REMATCH[4]}
PG_HOST=${BASH_REMATCH[5]}
PG_PORT=${BASH_REMATCH[7]:-5432}
PG_DB=${BASH_REMATCH[8]}
CREDENTIALS=$PG_USER${PG_PASSWORD:+:$PG_PASSWORD}

PGBOUNCER_PID=""
HAPROXY_PID=""
SERVER_PIDS=()
# TERM, then up to 5 s to finish, then KILL.
halt() {
  local pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "$@"; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
# The balancer first (no new requests), then the servers (they finish what they hold, through the pooler), the pooler last.
stop() {
  trap - EXIT INT TERM
  [ -n "$HAPROXY_PID" ] && halt "$HAPROXY_PID"
  [ ${#SERVER_PIDS[@]} -gt 0 ] && halt "${SERVER_PIDS[@]}"
  [ -n "$PGBOUNCER_PID" ] && halt "$PGBOUNCER_PID"
  return 0
}
trap stop EXIT
trap 'exit 0' INT TERM
if [ "${CLUSTER_STOP_ON_EOF:-}" = 1 ]; then
  # A background job reads /dev/null unless told otherwise, hence the explicit <&0.
  (cat >/dev/null; kill -TERM $$ 2>/dev/null) <&0 &
fi

if ! psql "${DB_URL%/*}/postgres" -Atqc "select 1 from pg_database where datname = '$PG_DB'" | grep -q 1; then
  psql "${DB_URL%/*}/postgres" -qc "create database \"$PG_DB\"" >/dev/null
fi

# PgBouncer refuses to run as root; it then drops to the Postgres system user.
RUN_AS=""
if [ "$(id -u)" = 0 ]; then RUN_AS="user = postgres"; fi
printf '"%s" "%s"\n' "$PG_USER" "$PG_PASSWORD" >"$DIR/pgbouncer-users.txt"
# A Postgres on this host is reached through its Unix socket when that answers: every statement crosses this hop,
# and a socket costs the kernel less than loopback TCP. Otherwise (another host, or the socket refuses), TCP.
PG_SERVER=$PG_HOST
SOCKET_DIR=${CLUSTER_PG_SOCKET_DIR:-/var/run/postgresql}
if [[ $PG_HOST =~ ^(127\.0\.0\.1|localhost)$ && -S "$SOCKET_DIR/.s.PGSQL.$PG_PORT" ]] &&
  PGPASSWORD=$PG_PASSWORD psql -h "$SOCKET_DIR" -p "$PG_PORT" -U "$PG_USER" -d "$PG_DB" -Atqc 'select 1' >/dev/null 2>&1; then
  PG_SERVER=$SOCKET_DIR
fi
# The server processes reach PgBouncer through its Unix socket too (DATABASE_URL's `?host=`, as libpq reads it); TCP
# stays open for everyone else. The socket's directory is open to PgBouncer's own user (it drops root); a path too
# long for a socket address keeps the processes on TCP.
PGB_SOCKET_DIR="$DIR/pgbouncer-socket"
if ((${#PGB_SOCKET_DIR} > 90)); then PGB_SOCKET_DIR=""; else mkdir -p "$PGB_SOCKET_DIR" && chmod 777 "$PGB_SOCKET_DIR"; fi
cat >"$DIR/pgbouncer.ini" <<EOF
[databases]
$PG_DB = host=$PG_SERVER port=$PG_PORT dbname=$PG_DB
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $PGB_PORT
unix_socket_dir = $PGB_SOCKET_DIR
auth_type = trust
auth_file = $DIR/pgbouncer-users.txt
pool_mode = transaction
default_pool_size = $POOL_SIZE
max_client_conn = 2000
ignore_startup_parameters = extra_float_digits,options
server_reset_query =
$RUN_AS
EOF
"$PGBOUNCER" "$DIR/pgbouncer.ini" >"$DIR/pgbouncer.log" 2>&1 &
PGBOUNCER_PID=$!
for _ in $(seq 1 50); do
  psql "postgres://$CREDENTIALS@127.0.0.1:$PGB_PORT/$PG_DB" -Atqc 'select 1' >/dev/null 2>&1 && break
  sleep 0.1
done

POOLED_URL="postgres://$CREDENTIALS@127.0.0.1:$PGB_PORT/$PG_DB${PGB_SOCKET_DIR:+?host=$PGB_SOCKET_DIR}"
export DATABASE_URL=$POOLED_URL DATABASE_DIRECT_URL=$DB_URL DATABASE_POOL_MODE=transaction
export_server_env

read -r -a SERVER_PORT_LIST <<<"${CLUSTER_SERVER_PORTS:-}"
if [ ${#SERVER_PORT_LIST[@]} -eq 0 ]; then
  for ((n = 0; n < PROCESSES; n++)); do SERVER_PORT_LIST+=($((SERVER_PORT + n))); done
fi
start_servers "${SERVER_PORT_LIST[@]}"
start_haproxy
wait_ready cluster "${SERVER_PORT_LIST[@]}"
echo "cluster ready http://127.0.0.1:$PORT $DIR"
wait "$HAPROXY_PID" "$PGBOUNCER_PID" "${SERVER_PIDS[@]}"
