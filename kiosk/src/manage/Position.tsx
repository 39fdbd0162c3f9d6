import Decimal from 'decimal.js'
import { createMemo, createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { ApiFailure, apiMoney } from './api'
import { formatArs } from './decimal'
import { totalsByCurrency, type Client } from './ledger'
import { sessionEnded } from './session'
import { NoteLine, when, type Note } from './ui'

/** How often the position asks again; an unchanged answer is a 304 with no body (contract §13). */
const POLL_MS = 2_000

/**
 * One list kept fresh by conditional GETs. The list is read in pages of 200; a branch has a few dozen cajas, so the
 * first page is the whole list and one ETag covers it.
 */
function createLive(type: 0 | 1) {
  const [clients, setClients] = createSignal<Client[] | null>(null)
  let etag: string | null = null
  const poll = async () => {
    const answer = await apiMoney<{ data: Client[] }>('GET', `/api/clients?type=${type}&page=1&pageSize=200`, { etag })
    if (answer.data) {
      etag = answer.etag
      setClients(answer.data.data)
    }
  }
  return { clients, poll }
}

const money = (value: string, currency: string) => `${currency} ${formatArs(value)}`

export function Position() {
  const boxes = createLive(0)
  const external = createLive(1)
  const [checked, setChecked] = createSignal<string | null>(null)
  const [note, setNote] = createSignal<Note | null>(null)
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false

  const tick = async () => {
    try {
      await Promise.all([boxes.poll(), external.poll()])
      setChecked(new Date().toISOString())
      setNote(null)
    } catch (e) {
      if (e instanceof ApiFailure && e.status === 401) return sessionEnded()
      setNote({ kind: 'error', text: 'No se pudo actualizar la posición; se reintenta sola.' })
    }
    if (!stopped) timer = setTimeout(tick, POLL_MS)
  }
  onMount(tick)
  onCleanup(() => {
    stopped = true
    clearTimeout(timer)
  })

  const totals = createMemo(() => totalsByCurrency((boxes.clients() ?? []).flatMap((c) => c.accounts)))
  const debts = createMemo(() =>
    (external.clients() ?? []).flatMap((c) => c.accounts.filter((a) => !new Decimal(a.balance).isZero()).map((a) => ({ client: c, account: a }))),
  )

  return (
    <section class="panel" data-testid="position-section">
      <h1>Posición de caja</h1>
      <p class="muted" aria-live="off">
        Se actualiza sola cada {POLL_MS / 1000} s. Última consulta: {when(checked())}
      </p>
      <NoteLine note={note()} />

      <section class="sub" aria-labelledby="totals-title">
        <h2 id="totals-title">Total por moneda</h2>
        <Show when={totals().length} fallback={<p class="muted">Sin saldos en cajas.</p>}>
          <table class="grid" data-testid="position-totals">
            <caption class="visually-hidden">Total de todas las cajas por moneda</caption>
            <thead>
              <tr>
                <th scope="col">Moneda</th>
                <th scope="col">Total en cajas</th>
              </tr>
            </thead>
            <tbody>
              <For each={totals()}>
                {(t) => (
                  <tr data-testid="total-row" data-currency={t.currency}>
                    <th scope="row">{t.currency}</th>
                    <td class="num" data-testid="total-amount">
                      {formatArs(t.total)}
                    </td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </Show>
      </section>

      <section class="sub" aria-labelledby="boxes-title">
        <h2 id="boxes-title">Cajas</h2>
        <Show when={boxes.clients()?.length} fallback={<p class="muted">No hay cajas a su alcance.</p>}>
          <table class="grid" data-testid="position-boxes">
            <caption class="visually-hidden">Saldo de cada caja por moneda</caption>
            <thead>
              <tr>
                <th scope="col">Caja</th>
                <th scope="col">Cuenta</th>
                <th scope="col">Saldo</th>
              </tr>
            </thead>
            <tbody>
              <For each={boxes.clients()}>
                {(c) => (
                  <For each={c.accounts}>
                    {(a) => (
                      <tr data-testid="box-row" data-account={a.id}>
                        <td>{c.name}</td>
                        <td>{a.name || a.currency_name}</td>
                        <td class="num" data-testid="box-balance">
                          {money(a.balance, a.currency_name)}
                        </td>
                      </tr>
                    )}
                  </For>
                )}
              </For>
            </tbody>
          </table>
        </Show>
      </section>

      <section class="sub" aria-labelledby="external-title">
        <h2 id="external-title">Cuentas corrientes</h2>
        <Show when={debts().length} fallback={<p class="muted">Ninguna cuenta corriente tiene saldo.</p>}>
          <table class="grid" data-testid="position-external">
            <caption class="visually-hidden">Saldos de clientes externos y quién debe a quién</caption>
            <thead>
              <tr>
                <th scope="col">Cliente</th>
                <th scope="col">Saldo</th>
                <th scope="col">Situación</th>
              </tr>
            </thead>
            <tbody>
              <For each={debts()}>
                {(d) => (
                  <tr data-testid="external-row" data-account={d.account.id}>
                    <td>{d.client.name}</td>
                    <td class="num">{money(new Decimal(d.account.balance).abs().toFixed(), d.account.currency_name)}</td>
                    {/* A credit (positive) on the client's account is money the house holds for it. */}
                    <td>{new Decimal(d.account.balance).isPositive() ? `La casa le debe a ${d.client.name}` : `${d.client.name} le debe a la casa`}</td>
                  </tr>
                )}
              </For>
            </tbody>
          </table>
        </Show>
      </section>
    </section>
  )
}
