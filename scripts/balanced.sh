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

# start_servers PORT...: one server process per port, its data and log under $DIR/server-N. With METRICS_PORT set,
# server N answers /metrics on METRICS_PORT + N − 1 (each process is scraped on its own, docs/metrics.md).
start_servers() {
  local n=0 port metrics
  BACKENDS=""
  for port in "$@"; do
    n=$((n + 1))
    mkdir -p "$DIR/server-$n"
    metrics=${METRICS_PORT:+$((METRICS_PORT + n - 1))}
    # The listener's own bound on a request head sits above MAX_HEADER_BYTES, so the application answers 431 itself.
    PORT=$port METRICS_PORT=$metrics DATA_DIR="$DIR/server-$n" "$BUN" --max-http-header-size=65536 server/main.ts >"$DIR/server-$n.log" 2>&1 &
    SERVER_PIDS+=($!)
    echo $! >"$DIR/server-$n.pid"
    BACKENDS+="    server s$n 127.0.0.1:$port check"$'\n'
  done
}

# start_haproxy: HAProxy on $PORT over the servers of start_servers, keeping a process in rotation while its
# /health/ready answers 200: its database answers, takes writes and holds this version's migrations. A process that
# alone cannot (its connections lost, a rolling deploy ahead of its migrations) gets no requests while the others
# serve them. When none is ready (the database restarting, a failover), HAProxy answers every request itself with
# what the processes would have answered: 503 SERVICE_UNAVAILABLE as JSON with Retry-After (its errorfile), and each
# process is back in rotation within two checks (0.2 s) of being ready again. Streams already open stay open.
start_haproxy() {
  local body='{"error":"No server process is ready; retry shortly","code":"SERVICE_UNAVAILABLE"}'
  printf 'HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\ncache-control: no-store\r\ncontent-length: %d\r\nconnection: close\r\n\r\n%s' \
    "${#body}" "$body" >"$DIR/haproxy-503.http"
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
    errorfile 503 $DIR/haproxy-503.http
frontend api
    bind 127.0.0.1:$PORT
    option forwardfor
    default_backend servers
backend servers
    # The process with the fewest requests in hand: a process paused (collecting garbage, or killed) gets no queue.
    balance leastconn
    # Any idle connection to a process serves any client's next request: no new connection per client connection.
    http-reuse always
    option httpchk GET /health/ready
    http-check expect status 200
    # A killed process refuses the check's connection at once, so 3 checks a second find it in about a second.
    # A busy one answers readiness only once the database does, which can take a moment under load: the process
    # answers within 3 s and the check waits 5 s, so load alone never takes a process out of rotation (nor cuts
    # its streams). A process out of rotation is checked every 100 ms, so it is back soon after it is ready.
    timeout check 5s
    default-server inter 300ms downinter 100ms fall 3 rise 2
    # Which process answered: for logs, and for the cluster test to pick a process that holds streams.
    http-response set-header X-Served-By %s
$BACKENDS
CFG
  "$HAPROXY" -W -db -f "$DIR/haproxy.cfg" >"$DIR/haproxy.log" 2>&1 &
  HAPROXY_PID=$!
}

# wait_ready NAME PORT...: waits (up to 180 s) until the server on each port and HAProxy answer /health/ready; a
# server that exits meanwhile stops the start with the end of its log.
wait_ready() {
  local name=$1 n=0 port deadline=$((SECONDS + 180))
  shift
  for port in "$@"; do
    n=$((n + 1))
    until curl -fsS "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1; do
      if ! kill -0 "$(cat "$DIR/server-$n.pid")" 2>/dev/null; then
        echo "$name: server $n exited; its log:" >&2
        tail -n 20 "$DIR/server-$n.log" >&2
        exit 1
      fi
      if ((SECONDS > deadline)); then echo "$name: server $n did not answer /health/ready" >&2; exit 1; fi
      sleep 0.2
    done
  done
  until curl -fsS "http://127.0.0.1:$PORT/health/ready" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "$name: HAProxy did not answer" >&2; exit 1; fi
    sleep 0.2
  done
}
