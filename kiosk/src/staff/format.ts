/** A duration as the console shows it: `m:ss`, or `h:mm:ss` past an hour. */
export function elapsed(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000))
  const h = Math.floor(total / 3600)
  const m = Math.floor((total % 3600) / 60)
  const s = String(total % 60).padStart(2, '0')
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${s}` : `${m}:${s}`
}

/** Which of the served services' next ticket is called first: priority before the rest, then by place in line. */
export function nextService<T extends { service_id: number; waiting: { priority: boolean; created_at: string; id: number }[] }>(
  services: T[],
  priorityFirst: boolean,
): T[] {
  const key = (s: T) => {
    const head = s.waiting[0]
    return [priorityFirst && head.priority ? 0 : 1, Date.parse(head.created_at), head.id] as const
  }
  return services
    .filter((s) => s.waiting.length > 0)
    .sort((a, b) => {
      const x = key(a)
      const y = key(b)
      return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]
    })
}
