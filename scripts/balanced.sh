# Sourced by scripts/cluster.sh and scripts/cluster-ha.sh: the server processes and HAProxy in front of them.
# Expects DIR, PORT (HAProxy's public port), BUN and HAPROXY; appends to SERVER_PIDS and sets HAPROXY_PID.

# The common server environment, exported before the processes start.
export_server_env() {
  export PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://127.0.0.1:$PORT}
  # HAProxy appends the client address to X-Forwarded-For; per-address limits count that address, not HAProxy's.
  export TRUST_PROXY=true
  # Every process must sign and verify the same download links.
  export SIGNING_SECRET=${SIGNING_SECRET:-$(head -c 32 /dev/urandom | base64 | tr -d '/+=\n')}
  # The runtime's allocator otherwise hands freed pages back to the system and faults them in again request after
  # request: about a fifth of a process's CPU (bench/README.md, "The runtime's allocator").
  export MIMALLOC_PURGE_DELAY=${MIMALLOC_PURGE_DELAY:--1}
}

# start_servers PORT...: one server process per port, its data and log under $DIR/server-N.
start_servers() {
  local n=0 port
  BACKENDS=""
  for port in "$@"; do
    n=$((n + 1))
    mkdir -p "$DIR/server-$n"
    # The listener's own bound on a request head sits above MAX_HEADER_BYTES, so the application answers 431 itself.
    PORT=$port DATA_DIR="$DIR/server-$n" "$BUN" --max-http-header-size=65536 server/main.ts >"$DIR/server-$n.log" 2>&1 &
    SERVER_PIDS+=($!)
    echo $! >"$DIR/server-$n.pid"
    BACKENDS+="    server s$n 127.0.0.1:$port check"$'\n'
  done
}

# start_haproxy STATUSES: HAProxy on $PORT over the servers of start_servers, keeping a process in rotation while
# its /health answers one of STATUSES (a regular expression: 200, or 200|503).
start_haproxy() {
  # Timeouts: a waiting-room stream is idle between snapshots but gets a heartbeat every 15 s, so client and server
  # timeouts sit well above that; `timeout tunnel` covers the long-lived response once it is streaming.
  cat >"$DIR/haproxy.cfg" <<CFG
global
    maxconn 4096
    # One thread: the processes behind it want the cores more than a second HAProxy thread does.
    nbthread 1
defaults
    mode http
    # Keep-alive on both sides (HAProxy's default): connections to the processes are reused across requests.
    option redispatch
    retries 2
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    timeout tunnel 1h
    timeout http-keep-alive 10s
    timeout queue 10s
frontend api
    bind 127.0.0.1:$PORT
    option forwardfor
    default_backend servers
backend servers
    # The process with the fewest requests in hand: a process paused (collecting garbage, or killed) gets no queue.
    balance leastconn
    # Any idle connection to a process serves any client's next request: no new connection per client connection.
    http-reuse always
    option httpchk GET /health
    http-check expect rstatus ^($1)\$
    # A killed process refuses the check's connection at once, so 3 checks a second find it in about a second.
    # A busy one answers /health only once the database does, which can take a moment under load: the check's
    # own timeout is generous, so load alone never takes a process out of rotation (nor cuts its streams).
    timeout check 5s
    default-server inter 300ms fall 3 rise 2
    # Which process answered: for logs, and for the cluster test to pick a process that holds streams.
    http-response set-header X-Served-By %s
$BACKENDS
CFG
  "$HAPROXY" -W -db -f "$DIR/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
}

# wait_ready NAME PORT...: waits (up to 180 s) until the server on each port and HAProxy answer /health; a server
# that exits meanwhile stops the start with the end of its log.
wait_ready() {
  local name=$1 n=0 port deadline=$((SECONDS + 180))
  shift
  for port in "$@"; do
    n=$((n + 1))
    until curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
      if ! kill -0 "$(cat "$DIR/server-$n.pid")" 2>/dev/null; then
        echo "$name: server $n exited; its log:" >&2
        tail -n 20 "$DIR/server-$n.log" >&2
        exit 1
      fi
      if ((SECONDS > deadline)); then echo "$name: server $n did not answer /health" >&2; exit 1; fi
      sleep 0.2
    done
  done
  until curl -fsS "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "$name: HAProxy did not answer" >&2; exit 1; fi
    sleep 0.2
  done
}
