import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js'
import { createEffect, createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { api } from './api'
import { createAction, NoteLine } from './ui'

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip)

export interface StatsRow {
  date: string
  service_id: number
  service_name?: string
  issued: number
  served: number
  no_show: number
  avg_wait_s: number | null
  p90_wait_s: number | null
  avg_service_s: number | null
}

/** The calendar day of `d` in `zone` as YYYY-MM-DD (Swedish dates are ISO-shaped). */
const isoDay = (d: Date, zone?: string) => d.toLocaleDateString('sv-SE', zone ? { timeZone: zone } : {})
const minutes = (s: number | null) => (s === null || s === undefined ? '—' : `${Math.floor(s / 60)}:${String(Math.round(s % 60)).padStart(2, '0')}`)
const dayLabel = (iso: string) => new Date(`${iso}T12:00:00`).toLocaleDateString('es-AR', { weekday: 'short', day: 'numeric', month: 'numeric' })

/** Totals per day over every service: what the counts chart draws. */
export function dailyTotals(rows: StatsRow[]) {
  const days = [...new Set(rows.map((r) => r.date))].sort()
  const sum = (day: string, k: 'issued' | 'served' | 'no_show') => rows.filter((r) => r.date === day).reduce((a, r) => a + r[k], 0)
  return { days, issued: days.map((d) => sum(d, 'issued')), served: days.map((d) => sum(d, 'served')), no_show: days.map((d) => sum(d, 'no_show')) }
}

function BarChart(props: { label: string; labels: string[]; series: { label: string; data: (number | null)[]; color: string }[]; testid: string }) {
  let canvas: HTMLCanvasElement | undefined
  let chart: Chart | undefined
  onMount(() => {
    chart = new Chart(canvas!, {
      type: 'bar',
      data: { labels: [], datasets: [] },
      options: { animation: false, responsive: true, maintainAspectRatio: false, scales: { y: { beginAtZero: true } }, plugins: { legend: { position: 'bottom' } } },
    })
  })
  createEffect(() => {
    const labels = props.labels
    const series = props.series
    if (!chart) return
    chart.data.labels = labels
    chart.data.datasets = series.map((s) => ({ label: s.label, data: s.data, backgroundColor: s.color }))
    chart.update()
  })
  onCleanup(() => chart?.destroy())
  return (
    <div class="chart">
      {/* The table below holds the same numbers for anyone who cannot see the chart. */}
      <canvas
        ref={canvas}
        role="img"
        aria-label={props.label}
        data-testid={props.testid}
        data-series={JSON.stringify({ labels: props.labels, series: props.series.map((s) => ({ label: s.label, data: s.data })) })}
      />
    </div>
  )
}

export function Stats() {
  const today = new Date()
  const weekAgo = new Date(today.getTime() - 6 * 86_400_000)
  const [from, setFrom] = createSignal(isoDay(weekAgo))
  const [to, setTo] = createSignal(isoDay(today))
  const [rows, setRows] = createSignal<StatsRow[]>([])
  const [shown, setShown] = createSignal({ from: from(), to: to() })
  const action = createAction()
  const query = () => `from=${encodeURIComponent(shown().from)}&to=${encodeURIComponent(shown().to)}`
  const load = (e?: Event) => {
    e?.preventDefault()
    if (!from() || !to()) return action.setNote({ kind: 'error', text: 'Elija las dos fechas.' })
    if (from() > to()) return action.setNote({ kind: 'error', text: 'La fecha «desde» es posterior a «hasta».' })
    void action.run(async () => {
      const body = await api<{ data: StatsRow[] }>('GET', `/api/ventanilla/stats?from=${from()}&to=${to()}`)
      setShown({ from: from(), to: to() })
      setRows(body.data)
    })
  }
  // The stats' days are the company's: a branch in Buenos Aires at 22:00 is still on today there.
  onMount(async () => {
    const zone = await api<{ timezone: string }>('GET', '/api/ventanilla/settings').then(
      (s) => s.timezone,
      () => undefined,
    )
    if (zone) {
      try {
        setFrom(isoDay(weekAgo, zone))
        setTo(isoDay(today, zone))
      } catch {
        // A zone this browser does not know: the browser's own days.
      }
    }
    load()
  })
  const totals = () => dailyTotals(rows())
  const timeRows = () => rows().filter((r) => r.avg_wait_s !== null || r.avg_service_s !== null)
  return (
    <section class="panel" data-testid="stats-section">
      <h1>Estadísticas</h1>
      <form class="inline" onSubmit={load}>
        <label>
          Desde
          <input type="date" name="from" value={from()} onInput={(e) => setFrom(e.currentTarget.value)} />
        </label>
        <label>
          Hasta
          <input type="date" name="to" value={to()} onInput={(e) => setTo(e.currentTarget.value)} />
        </label>
        <button type="submit" class="primary" disabled={action.busy()} data-testid="stats-load">
          Ver
        </button>
        <a class="button" href={`/api/ventanilla/stats?${query()}&format=csv`} download={`turnos-${shown().from}-${shown().to}.csv`} data-testid="stats-csv">
          Descargar CSV
        </a>
      </form>
      <NoteLine note={action.note()} />
      <div class="charts">
        <BarChart
          testid="chart-counts"
          label="Turnos por día: emitidos, atendidos y ausentes (los números están en la tabla)"
          labels={totals().days.map(dayLabel)}
          series={[
            { label: 'Emitidos', data: totals().issued, color: '#1f5fbf' },
            { label: 'Atendidos', data: totals().served, color: '#2e8540' },
            { label: 'Ausentes', data: totals().no_show, color: '#b3261e' },
          ]}
        />
        <BarChart
          testid="chart-times"
          label="Tiempos en minutos por día y servicio: espera promedio, espera p90 y atención promedio (los números están en la tabla)"
          labels={timeRows().map((r) => `${dayLabel(r.date)} ${r.service_name ?? r.service_id}`)}
          series={[
            { label: 'Espera promedio (min)', data: timeRows().map((r) => (r.avg_wait_s === null ? null : r.avg_wait_s / 60)), color: '#1f5fbf' },
            { label: 'Espera p90 (min)', data: timeRows().map((r) => (r.p90_wait_s === null ? null : r.p90_wait_s / 60)), color: '#7a4fbf' },
            { label: 'Atención promedio (min)', data: timeRows().map((r) => (r.avg_service_s === null ? null : r.avg_service_s / 60)), color: '#2e8540' },
          ]}
        />
      </div>
      <table class="grid" data-testid="stats-table">
        <caption class="visually-hidden">Turnos por día y servicio</caption>
        <thead>
          <tr>
            <th scope="col">Día</th>
            <th scope="col">Servicio</th>
            <th scope="col">Emitidos</th>
            <th scope="col">Atendidos</th>
            <th scope="col">Ausentes</th>
            <th scope="col">Espera prom.</th>
            <th scope="col">Espera p90</th>
            <th scope="col">Atención prom.</th>
          </tr>
        </thead>
        <tbody>
          <For each={rows()} fallback={<tr><td colspan="8" class="muted">Sin turnos en esas fechas.</td></tr>}>
            {(r) => (
              <tr data-testid="stats-row">
                <td>{r.date}</td>
                <td>{r.service_name ?? r.service_id}</td>
                <td class="num">{r.issued}</td>
                <td class="num">{r.served}</td>
                <td class="num">{r.no_show}</td>
                <td class="num">{minutes(r.avg_wait_s)}</td>
                <td class="num">{minutes(r.p90_wait_s)}</td>
                <td class="num">{minutes(r.avg_service_s)}</td>
              </tr>
            )}
          </For>
        </tbody>
      </table>
      <Show when={rows().length}>
        <p class="muted small">Tiempos en minutos:segundos. Espera: desde que sacó el turno hasta el primer llamado; atención: del último llamado al cierre.</p>
      </Show>
    </section>
  )
}
