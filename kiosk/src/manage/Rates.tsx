import { createSignal, For, onCleanup, onMount, Show } from 'solid-js'
import { createStore, produce } from 'solid-js/store'
import { api, apiExact } from './api'
import { formatArs, lessThan, parseArs } from './decimal'
import { createAction, NoteLine, when } from './ui'

/** Numbers stay the text the server sent (see apiExact). */
interface RatesBody {
  rates: { currency: string; buy: string; sell: string; mid: string }[]
  updated_at: string | null
  updated_by: string | null
}

interface Row {
  key: number
  currency: string
  buy: string
  sell: string
  errors: { currency?: string; buy?: string; sell?: string }
}

const CURRENCY = /^[A-Za-z0-9]{1,10}$/
let nextKey = 1

export function Rates() {
  const [rows, setRows] = createStore<Row[]>([])
  const [meta, setMeta] = createSignal<{ at: string | null; by: string | null } | null>(null)
  const [inverted, setInverted] = createSignal<string[]>([])
  const action = createAction()
  let table: HTMLTableElement | undefined

  const load = () =>
    action.run(async () => {
      const body = await apiExact<RatesBody>('/api/ventanilla/rates')
      setRows(body.rates.map((r) => ({ key: nextKey++, currency: r.currency, buy: formatArs(String(r.buy)), sell: formatArs(String(r.sell)), errors: {} })))
      setMeta({ at: body.updated_at, by: body.updated_by })
    })
  onMount(load)

  const addRow = () => {
    setRows(rows.length, { key: nextKey++, currency: '', buy: '', sell: '', errors: {} })
    queueMicrotask(() => table?.querySelector<HTMLInputElement>('tbody tr:last-child input')?.focus())
  }
  const removeRow = (i: number) => setRows(produce((r) => void r.splice(i, 1)))

  /** Checks every cell; answers the body to send, or null with each bad cell's message in place. */
  function validate(): { currency: string; buy: string; sell: string }[] | null {
    const out: { currency: string; buy: string; sell: string }[] = []
    const seen = new Set<string>()
    let bad = false
    rows.forEach((row, i) => {
      const errors: Row['errors'] = {}
      const currency = row.currency.trim().toUpperCase()
      if (!CURRENCY.test(currency)) errors.currency = 'Código de 1 a 10 letras o números, por ejemplo USD.'
      else if (seen.has(currency)) errors.currency = `${currency} está repetida.`
      seen.add(currency)
      const buy = parseArs(row.buy)
      const sell = parseArs(row.sell)
      if (!buy.ok) errors.buy = buy.message
      if (!sell.ok) errors.sell = sell.message
      setRows(i, 'errors', errors)
      if (Object.keys(errors).length) bad = true
      else out.push({ currency, buy: (buy as { value: string }).value, sell: (sell as { value: string }).value })
    })
    return bad ? null : out
  }

  const save = (confirmed = false) => {
    const rates = validate()
    if (!rates) {
      action.setNote({ kind: 'error', text: 'Hay valores para corregir; no se publicó nada.' })
      return
    }
    const low = rates.filter((r) => lessThan(r.sell, r.buy)).map((r) => r.currency)
    if (low.length && !confirmed) {
      setInverted(low)
      return
    }
    setInverted([])
    void action.run(async () => {
      await api('PUT', '/api/ventanilla/rates', { rates })
      const body = await apiExact<RatesBody>('/api/ventanilla/rates')
      setMeta({ at: body.updated_at, by: body.updated_by })
      return 'Cotizaciones publicadas: las pantallas ya las muestran.'
    })
  }

  /**
   * Enter moves on like Tab (a number typed, the next cell); past the last cell it adds a row for the next currency,
   * as a spreadsheet would, unless that last row is still empty: then it lands on «Publicar».
   */
  const onCellKey = (e: KeyboardEvent) => {
    if (e.key !== 'Enter') return
    e.preventDefault()
    const cells = [...(table?.querySelectorAll<HTMLInputElement>('input') ?? [])]
    const at = cells.indexOf(e.currentTarget as HTMLInputElement)
    const last = rows[rows.length - 1]
    if (at >= 0 && at < cells.length - 1) cells[at + 1].focus()
    else if (last && (last.currency.trim() || last.buy.trim() || last.sell.trim())) addRow()
    else document.getElementById('publish-rates')?.focus()
  }
  const onKey = (e: KeyboardEvent) => {
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 's') {
      e.preventDefault()
      save()
    }
  }
  onMount(() => window.addEventListener('keydown', onKey))
  onCleanup(() => window.removeEventListener('keydown', onKey))

  const cell = (i: () => number, field: 'currency' | 'buy' | 'sell', label: string) => {
    const id = () => `rate-${rows[i()].key}-${field}`
    return (
      <td>
        <input
          id={id()}
          aria-label={label}
          aria-invalid={rows[i()].errors[field] ? 'true' : undefined}
          aria-describedby={rows[i()].errors[field] ? `${id()}-error` : undefined}
          class={field === 'currency' ? 'code' : 'money'}
          inputmode={field === 'currency' ? 'text' : 'decimal'}
          autocomplete="off"
          maxlength={field === 'currency' ? 10 : 32}
          value={rows[i()][field]}
          onInput={(e) => setRows(i(), field, e.currentTarget.value)}
          onKeyDown={onCellKey}
          data-testid={`rate-${field}`}
        />
        <Show when={rows[i()].errors[field]}>
          <span class="cell-error" id={`${id()}-error`} data-testid="cell-error">
            {rows[i()].errors[field]}
          </span>
        </Show>
      </td>
    )
  }

  return (
    <section class="panel" data-testid="rates-section">
      <h1>Cotizaciones</h1>
      <p class="muted">
        Compra y venta con coma decimal (1.165,50). <kbd>Tab</kbd> o <kbd>Enter</kbd> pasa a la celda siguiente; <kbd>Enter</kbd> en la
        última agrega otra moneda; <kbd>Ctrl</kbd>+<kbd>S</kbd> publica.
      </p>
      <p data-testid="rates-updated">
        Última publicación: <strong>{when(meta()?.at)}</strong>
        <Show when={meta()?.at}> por {meta()?.by ?? 'una clave de la empresa'}</Show>
      </p>
      <form
        onSubmit={(e) => {
          e.preventDefault()
          save()
        }}
      >
        <table class="grid compact" ref={table} data-testid="rates-table">
          <thead>
            <tr>
              <th scope="col">Moneda</th>
              <th scope="col">Compra</th>
              <th scope="col">Venta</th>
              <th scope="col">
                <span class="visually-hidden">Acciones</span>
              </th>
            </tr>
          </thead>
          <tbody>
            <For each={rows} fallback={<tr><td colspan="4" class="muted">Sin monedas. Agregue una.</td></tr>}>
              {(row, i) => (
                <tr data-testid="rate-row">
                  {cell(i, 'currency', `Moneda de la fila ${i() + 1}`)}
                  {cell(i, 'buy', `Compra ${row.currency || `fila ${i() + 1}`}`)}
                  {cell(i, 'sell', `Venta ${row.currency || `fila ${i() + 1}`}`)}
                  <td>
                    <button type="button" class="link danger" onClick={() => removeRow(i())}>
                      Quitar {row.currency}
                    </button>
                  </td>
                </tr>
              )}
            </For>
          </tbody>
        </table>
        <Show when={inverted().length}>
          <div class="warning" role="alert" data-testid="rates-inverted">
            <p>
              La venta es menor que la compra en {inverted().join(', ')}. ¿Es correcto?
            </p>
            <button type="button" class="primary" onClick={() => save(true)} data-testid="rates-confirm">
              Sí, publicar igual
            </button>
            <button type="button" onClick={() => setInverted([])}>
              No, corregir
            </button>
          </div>
        </Show>
        <div class="row">
          <button type="button" onClick={addRow} data-testid="rates-add">
            Agregar moneda
          </button>
          <button id="publish-rates" type="submit" class="primary" disabled={action.busy()} data-testid="rates-save">
            Publicar <kbd>Ctrl+S</kbd>
          </button>
        </div>
      </form>
      <NoteLine note={action.note()} />
    </section>
  )
}
