// Load generator process for the benchmarks: autocannon under Node, apart from the server and the bench script
// so it never shares their event loop. Reads one JSON spec from argv, prints one JSON result line on stdout.
// Percentiles are exact over every response (autocannon's own summary has no p95); the sorted latencies go
// along so a caller can merge several runs.
//   node bench/lib/load.mjs '{"url":"http://127.0.0.1:3000","connections":64,"duration":10,"requests":[{"path":"/x","headers":{}}]}'
import autocannon from 'autocannon'

const spec = JSON.parse(process.argv[2])
const latencies = []
const instance = autocannon({
  url: spec.url,
  connections: spec.connections,
  duration: spec.duration,
  requests: spec.requests.map((r) => ({ method: r.method ?? 'GET', path: r.path, headers: r.headers ?? {}, ...(r.body !== undefined && { body: r.body }) })),
  timeout: 10,
  ...(spec.rate !== undefined && { overallRate: spec.rate }),
})
instance.on('response', (_client, _status, _bytes, ms) => latencies.push(ms))
const result = await instance
latencies.sort((a, b) => a - b)
const at = (p) => (latencies.length ? latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)] : null)
process.stdout.write(
  `${JSON.stringify({
    requests: latencies.length,
    seconds: result.duration,
    rps: latencies.length / result.duration,
    p50: at(50),
    p95: at(95),
    p99: at(99),
    max: at(100),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    bytesPerResponse: latencies.length ? Math.round(result.throughput.total / latencies.length) : 0,
    latencies: latencies.map((ms) => Math.round(ms * 100) / 100),
  })}\n`,
)
