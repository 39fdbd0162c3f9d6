import { BarController, BarElement, CategoryScale, Chart, Legend, LinearScale, Tooltip } from 'chart.js'
import { createEffect, createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { ApiFailure, money } from './api'
import { formatArs } from './decimal'
import { can } from './session'
import { createAction, NoteLine } from './ui'

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Legend, Tooltip)

/** GET /api/metrics/home with `money=string` (contract §9): every amount a decimal string. */
interface Home {
  date: string
  dayPnl: { mesa_id: number; currency: string; realized: string }[]
  commissions: { currency: string; amount: string }[]
  costCenters: { cost_center_id: number; name: string; currency: string; budget: string; spent: string }[]
}

interface Mesa {
  id: number
  name: string
  local_currency: string
  quote_currency: string
  costing_method: 'fifo' | 'wac'
}

interface Position {
  quote_position: string
  average_cost: string | null
  realized_pnl: string
}

/**
 * A bar chart of amounts. Bar heights are pixels, so there (and only there) a decimal becomes a float; the exact
 * strings go to the table beside the chart, to the tooltip and to `data-series`.
 */
function MoneyChart(props: { label: string; labels: string[]; series: { label: string; data: string[]; color: string }[]; testid: string }) {
  let canvas: HTMLCanvasElement | undefined
  let chart: Chart | undefined
  onMount(() => {
    chart = new Chart(canvas!, {
      type: 'bar',
      data: { labels: [], datasets: [] },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: { y: { beginAtZero: true } },
        plugins: {
          legend: { position: 'bottom' },
          tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${formatArs(props.series[c.datasetIndex]?.data[c.dataIndex] ?? '0')}` } },
        },
      },
    })
  })
  createEffect(() => {
    const labels = props.labels
    const series = props.series
    if (!chart) return
    chart.data.labels = labels
    chart.data.datasets = series.map((s) => ({ label: s.label, data: s.data.map(Number), backgroundColor: s.color }))
    chart.update()
  })
  onCleanup(() => chart?.destroy())
  return (
    <div class="chart">
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

export function Results() {
  const [home, setHome] = createSignal<Home | null>(null)
  const [mesas, setMesas] = createSignal<{ mesa: Mesa; position: Position }[] | null>(null)
  const action = createAction()
  const mesaName = (id: number) => mesas()?.find((m) => m.mesa.id === id)?.mesa.name ?? `Mesa ${id}`

  const loadMesas = async () => {
    if (!can('mesas.view') && !can('mesas.manage')) return
    try {
      const list = (await money<{ data: Mesa[] }>('GET', '/api/mesas')).data
      setMesas(await Promise.all(list.map(async (mesa) => ({ mesa, position: await money<Position>('GET', `/api/mesas/${mesa.id}/position`) }))))
    } catch (e) {
      // A company without mesas answers MESAS_DISABLED: the section simply has no mesas part.
      if (!(e instanceof ApiFailure && e.code === 'MESAS_DISABLED')) throw e
    }
  }
  const load = () => action.run(async () => void (await Promise.all([money<Home>('GET', '/api/metrics/home').then(setHome), loadMesas()])))
  onMount(load)

  return (
    <section class="panel" data-testid="results-section">
      <h1>Resultado</h1>
      <div class="row">
        <p class="muted">Del día {home()?.date.split('-').reverse().join('/') ?? '…'} (hora de la empresa).</p>
        <button type="button" onClick={load} disabled={action.busy()}>
          Actualizar
        </button>
      </div>
      <NoteLine note={action.note()} />
      <Show when={home()}>
        {(h) => (
          <div class="charts">
            <section class="sub" aria-labelledby="pnl-title">
              <h2 id="pnl-title">Resultado realizado de las mesas</h2>
              <Show when={h().dayPnl.length} fallback={<p class="muted">Sin operaciones de mesa hoy.</p>}>
                <MoneyChart
                  label="Resultado realizado del día por mesa"
                  testid="chart-pnl"
                  labels={h().dayPnl.map((p) => `${mesaName(p.mesa_id)} (${p.currency})`)}
                  series={[{ label: 'Realizado', data: h().dayPnl.map((p) => p.realized), color: '#1d6f42' }]}
                />
                <table class="grid" data-testid="table-pnl">
                  <caption class="visually-hidden">Resultado realizado del día por mesa</caption>
                  <thead>
                    <tr>
                      <th scope="col">Mesa</th>
                      <th scope="col">Realizado</th>
                    </tr>
                  </thead>
                  <tbody>
                    <For each={h().dayPnl}>
                      {(p) => (
                        <tr>
                          <td>{mesaName(p.mesa_id)}</td>
                          <td class="num">
                            {p.currency} {formatArs(p.realized)}
                          </td>
                        </tr>
                      )}
                    </For>
                  </tbody>
                </table>
              </Show>
            </section>
            <section class="sub" aria-labelledby="commissions-title">
              <h2 id="commissions-title">Comisiones del día</h2>
              <Show when={h().commissions.length} fallback={<p class="muted">Sin comisiones aprobadas hoy.</p>}>
                <MoneyChart
                  label="Comisiones del día por moneda"
                  testid="chart-commissions"
                  labels={h().commissions.map((c) => c.currency)}
                  series={[{ label: 'Comisiones', data: h().commissions.map((c) => c.amount), color: '#1f5fbf' }]}
                />
                <table class="grid" data-testid="table-commissions">
                  <caption class="visually-hidden">Comisiones del día por moneda</caption>
                  <thead>
                    <tr>
                      <th scope="col">Moneda</th>
                      <th scope="col">Comisiones</th>
                    </tr>
                  </thead>
                  <tbody>
                    <For each={h().commissions}>
                      {(c) => (
                        <tr>
                          <td>{c.currency}</td>
                          <td class="num">{formatArs(c.amount)}</td>
                        </tr>
                      )}
                    </For>
                  </tbody>
                </table>
              </Show>
            </section>
            <section class="sub" aria-labelledby="cc-title">
              <h2 id="cc-title">Centros de costo del mes</h2>
              <Show when={h().costCenters.length} fallback={<p class="muted">Sin centros de costo con presupuesto o gastos este mes.</p>}>
                <MoneyChart
                  label="Presupuesto y gasto del mes por centro de costo"
                  testid="chart-cost-centers"
                  labels={h().costCenters.map((c) => `${c.name} (${c.currency})`)}
                  series={[
                    { label: 'Presupuesto', data: h().costCenters.map((c) => c.budget), color: '#5b6b7a' },
                    { label: 'Gastado', data: h().costCenters.map((c) => c.spent), color: '#a4262c' },
                  ]}
                />
                <table class="grid">
                  <caption class="visually-hidden">Presupuesto y gasto del mes por centro de costo</caption>
                  <thead>
                    <tr>
                      <th scope="col">Centro de costo</th>
                      <th scope="col">Presupuesto</th>
                      <th scope="col">Gastado</th>
                    </tr>
                  </thead>
                  <tbody>
                    <For each={h().costCenters}>
                      {(c) => (
                        <tr>
                          <td>{c.name}</td>
                          <td class="num">
                            {c.currency} {formatArs(c.budget)}
                          </td>
                          <td class="num">
                            {c.currency} {formatArs(c.spent)}
                          </td>
                        </tr>
                      )}
                    </For>
                  </tbody>
                </table>
              </Show>
            </section>
          </div>
        )}
      </Show>
      <Show when={mesas()?.length}>
        <section class="sub" aria-labelledby="mesas-title" data-testid="mesas-positions">
          <h2 id="mesas-title">Posición de las mesas</h2>
          <table class="grid">
            <caption class="visually-hidden">Posición abierta, costo promedio y resultado realizado de cada mesa</caption>
            <thead>
              <tr>
                <th scope="col">Mesa</th>
                <th scope="col">Posición</th>
                <th scope="col">Costo promedio</th>
                <th scope="col">Resultado realizado</th>
                <th scope="col">Método</th>
              </tr>
            </thead>
            <tbody>
              <For each={mesas()}>
                {(m) => (
                  <tr data-testid="mesa-row" data-id={m.mesa.id}>
                    <td>{m.mesa.name}</td>
                    <td class="num">
                      {m.mesa.quote_currency} {formatArs(m.position.quote_position)}
                    </td>
                    <td class="num">{m.position.average_cost === null ? '—' : `${m.mesa.local_currency} ${formatArs(m.position.average_cost)}`}</td>
                    <td class="num">
                      {m.mesa.local_currency} {formatArs(m.position.realized_pnl)}
                    </td>
                    <td>{m.mesa.costing_method === 'fifo' ? 'PEPS (FIFO)' : 'Promedio ponderado'}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </section>
      </Show>
    </section>
  )
}
