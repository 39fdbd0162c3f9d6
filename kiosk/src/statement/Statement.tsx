import { createSignal, For, onMount, Show } from 'solid-js'
import { saveFile } from '../download'
import { formatArs } from '../manage/decimal'
import { refusal } from './refusal'

/**
 * An external customer's statement, opened from the link the manager app hands out with an access grant:
 * `/estado-de-cuenta/<client id>#<token>`. The token is read from the fragment (a browser never sends it, so it stays
 * out of every log) and goes to the API only as `Authorization: Bearer`, with no cookie. Amounts are asked for as
 * decimal strings (`money=string`) and shown es-AR, every digit kept.
 */

interface Movement {
  id: number
  operation_id: number
  completed_at: string
  description: string
  amount: string
  running_balance: string
}

interface StatementAccount {
  id: number
  name: string
  currency_name: string
  balance: string
  opening_balance: string
  closing_balance: string
  transactions: Movement[]
}

interface StatementBody {
  client: { id: number; name: string }
  timezone: string
  accounts: StatementAccount[]
}

/** Days a statement shows when opened: about three months, with the balance it started from. */
const DAYS = 90
const ZONE = 'America/Argentina/Buenos_Aires'

const day = (d: Date, zone = ZONE) => new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d)
const shownTime = (iso: string, zone: string) =>
  new Intl.DateTimeFormat('es-AR', { timeZone: zone, day: '2-digit', month: '2-digit', year: 'numeric', hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(new Date(iso))
/** `2026-03-01` as `01/03/2026`. */
const typedDay = (value: string) => value.split('-').reverse().join('/')

export function Statement() {
  const id = /^\/estado-de-cuenta\/(\d+)\/?$/.exec(location.pathname)?.[1] ?? ''
  const token = decodeURIComponent(location.hash.replace(/^#/, ''))
  const [from, setFrom] = createSignal(day(new Date(Date.now() - (DAYS - 1) * 86_400_000)))
  const [to, setTo] = createSignal('')
  const [shown, setShown] = createSignal<{ body: StatementBody; from: string; to: string } | null>(null)
  const [problem, setProblem] = createSignal<string | null>(null)
  const [closed, setClosed] = createSignal(!token)
  const [rangeError, setRangeError] = createSignal<string | null>(null)
  const [busy, setBusy] = createSignal(false)

  const ask = async (format: 'json' | 'csv') => {
    const q = new URLSearchParams({ format })
    if (from()) q.set('from', from())
    if (to()) q.set('to', to())
    let res: Response
    try {
      res = await fetch(`/api/external/clients/${id}/statement?${q}`, {
        credentials: 'omit',
        cache: 'no-store',
        headers: { authorization: `Bearer ${token}`, accept: 'application/json; money=string' },
      })
    } catch {
      throw new Error(refusal(0, null))
    }
    if (res.ok) return res
    // A link that no longer opens anything: nothing else on the page can help.
    if (res.status === 401 || res.status === 404) setClosed(true)
    throw new Error(refusal(res.status, await res.json().catch(() => null)))
  }

  const run = async (work: () => Promise<void>) => {
    if (from() && to() && from() > to()) return setRangeError('«Desde» es posterior a «Hasta».')
    setRangeError(null)
    setBusy(true)
    setProblem(null)
    try {
      await work()
    } catch (e) {
      setProblem((e as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const load = () =>
    run(async () => {
      const asked = { from: from(), to: to() }
      setShown({ body: (await (await ask('json')).json()) as StatementBody, ...asked })
    })
  const download = () =>
    run(async () => {
      saveFile(`estado-de-cuenta-${id}.csv`, await (await ask('csv')).blob())
    })
  onMount(() => {
    if (token && id) void load()
  })

  const range = () => {
    const s = shown()
    if (!s) return ''
    if (s.from && s.to) return `Del ${typedDay(s.from)} al ${typedDay(s.to)}`
    if (s.from) return `Desde el ${typedDay(s.from)} hasta hoy`
    if (s.to) return `Desde el primer movimiento hasta el ${typedDay(s.to)}`
    return 'Desde el primer movimiento hasta hoy'
  }

  return (
    <main class="statement" data-testid="statement">
      <h1>{shown() ? `Estado de cuenta de ${shown()!.body.client.name}` : 'Estado de cuenta'}</h1>
      <Show when={!token || !id}>
        <p class="note error" role="alert" data-testid="statement-problem">
          Este enlace está incompleto. Ábralo tal como se lo enviaron, con la parte que sigue a «#».
        </p>
      </Show>
      <Show when={problem()}>
        <p class="note error" role="alert" data-testid="statement-problem">
          {problem()}
        </p>
      </Show>
      <Show when={!closed()}>
        <form
          class="range"
          aria-label="Fechas del estado de cuenta"
          onSubmit={(e) => {
            e.preventDefault()
            void load()
          }}
          novalidate
        >
          <label>
            Desde
            <input type="date" name="from" value={from()} aria-invalid={rangeError() ? 'true' : undefined} aria-describedby="range-hint" onInput={(e) => setFrom(e.currentTarget.value)} />
          </label>
          <label>
            Hasta
            <input type="date" name="to" value={to()} aria-invalid={rangeError() ? 'true' : undefined} aria-describedby="range-hint" onInput={(e) => setTo(e.currentTarget.value)} />
          </label>
          <div class="buttons">
            <button type="submit" class="primary" disabled={busy()} data-testid="statement-show">
              Ver
            </button>
            <button type="button" disabled={busy()} onClick={() => void download()} data-testid="statement-csv">
              Descargar CSV
            </button>
          </div>
          <p class="hint" id="range-hint">
            Sin «Desde», desde el primer movimiento; sin «Hasta», hasta hoy.
          </p>
          <Show when={rangeError()}>
            <p class="field-error" role="alert" data-testid="statement-range-error">
              {rangeError()}
            </p>
          </Show>
        </form>
        <Show when={shown()} fallback={<p class="muted">{busy() ? 'Cargando…' : ''}</p>}>
          {(s) => (
            <>
              <p class="muted" data-testid="statement-range">
                {range()}. Un importe negativo es un débito en su cuenta; uno positivo, un crédito.
              </p>
              <For each={s().body.accounts} fallback={<p class="muted">Esta cuenta no tiene subcuentas en ninguna moneda.</p>}>
                {(a) => (
                  <section class="account" aria-labelledby={`account-${a.id}`} data-testid="statement-account" data-currency={a.currency_name}>
                    <h2 id={`account-${a.id}`}>
                      {a.name === a.currency_name ? a.currency_name : `${a.name} (${a.currency_name})`}
                    </h2>
                    <dl class="facts">
                      <div>
                        <dt>Saldo al inicio</dt>
                        <dd data-testid="opening">
                          {a.currency_name} {formatArs(a.opening_balance)}
                        </dd>
                      </div>
                      <div>
                        <dt>Saldo al cierre</dt>
                        <dd data-testid="closing">
                          {a.currency_name} {formatArs(a.closing_balance)}
                        </dd>
                      </div>
                      <div>
                        <dt>Saldo actual</dt>
                        <dd data-testid="balance">
                          {a.currency_name} {formatArs(a.balance)}
                        </dd>
                      </div>
                    </dl>
                    <Show when={a.transactions.length} fallback={<p class="muted">Sin movimientos en estas fechas.</p>}>
                      <table>
                        <caption class="visually-hidden">Movimientos en {a.currency_name}</caption>
                        <thead>
                          <tr>
                            <th scope="col">Fecha</th>
                            <th scope="col">Detalle</th>
                            <th scope="col" class="num">
                              Importe ({a.currency_name})
                            </th>
                            <th scope="col" class="num">
                              Saldo ({a.currency_name})
                            </th>
                          </tr>
                        </thead>
                        <tbody>
                          <For each={a.transactions}>
                            {(m) => (
                              <tr data-testid="movement">
                                <td data-label="Fecha">{shownTime(m.completed_at, s().body.timezone)}</td>
                                <td data-label="Detalle">
                                  {m.description || 'Movimiento'} <span class="muted">· operación {m.operation_id}</span>
                                </td>
                                <td data-label="Importe" class="num" classList={{ debit: m.amount.startsWith('-') }} data-testid="movement-amount">
                                  {formatArs(m.amount)}
                                </td>
                                <td data-label="Saldo" class="num" data-testid="movement-balance">
                                  {formatArs(m.running_balance)}
                                </td>
                              </tr>
                            )}
                          </For>
                        </tbody>
                      </table>
                    </Show>
                  </section>
                )}
              </For>
            </>
          )}
        </Show>
      </Show>
    </main>
  )
}
