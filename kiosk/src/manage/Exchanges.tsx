import { A } from '@solidjs/router'
import Decimal from 'decimal.js'
import { createMemo, For, Show } from 'solid-js'
import { money } from './api'
import { formatArs } from './decimal'
import { STATUS_LABEL, type Page } from './ledger'
import { when } from './ui'
import { SIDE_LABEL, type ExchangeListItem } from '../exchange'

/** The exchanges made between two days (`GET /api/exchanges`, contract §19), newest first, every page up to ten. */
export async function exchangesOf(query: { from: string; to: string; client_id?: string }): Promise<ExchangeListItem[]> {
  const out: ExchangeListItem[] = []
  for (let page = 1; page <= 10; page++) {
    const q = new URLSearchParams({ page: String(page), pageSize: '200' })
    if (query.from) q.set('from', query.from)
    if (query.to) q.set('to', query.to)
    if (query.client_id) q.set('client_id', query.client_id)
    const body = await money<Page<ExchangeListItem>>('GET', `/api/exchanges?${q}`)
    out.push(...body.data)
    if (page >= body.pagination.totalPages) break
  }
  return out
}

/** What the customer received (buy) or paid (sell) in the local currency, as the receipt's total. */
const total = (x: ExchangeListItem) =>
  (x.side === 'buy' ? new Decimal(x.local_amount).minus(x.commission) : new Decimal(x.local_amount).plus(x.commission)).toFixed(2)

/**
 * *Operaciones* with the «Cambios» view: the period's purchases and sales with their receipt numbers, each a link to
 * its printable receipt, and what was bought and sold per currency (cancelled ones left out of the sums).
 */
export function ExchangesTable(props: { rows: ExchangeListItem[]; clientName: (id: number | null) => string; localCurrency: string }) {
  const sums = createMemo(() => {
    const by = new Map<string, { bought: Decimal; sold: Decimal }>()
    for (const x of props.rows) {
      if (x.status === 'cancelled') continue
      const s = by.get(x.currency) ?? { bought: new Decimal(0), sold: new Decimal(0) }
      if (x.side === 'buy') s.bought = s.bought.plus(x.amount)
      else s.sold = s.sold.plus(x.amount)
      by.set(x.currency, s)
    }
    return [...by].sort(([a], [b]) => a.localeCompare(b))
  })
  return (
    <Show when={props.rows.length} fallback={<p class="muted">No hay compras ni ventas de divisas en esas fechas.</p>}>
      <p data-testid="exchanges-summary">
        {props.rows.length} {props.rows.length === 1 ? 'operación de cambio' : 'operaciones de cambio'}
        <For each={sums()}>
          {([currency, s]) => (
            <>
              {' · '}
              {currency}: compras {formatArs(s.bought.toFixed())}, ventas {formatArs(s.sold.toFixed())}
            </>
          )}
        </For>
      </p>
      <div class="scroll-x">
      <table class="grid" data-testid="exchanges-table">
        <caption class="visually-hidden">Compras y ventas de divisas con su boleto</caption>
        <thead>
          <tr>
            <th scope="col">Boleto</th>
            <th scope="col">Fecha</th>
            <th scope="col">Operación</th>
            <th scope="col">Importe</th>
            <th scope="col">Cotización</th>
            <th scope="col">Comisión</th>
            <th scope="col">Total {props.localCurrency}</th>
            <th scope="col">Cliente</th>
            <th scope="col">Caja</th>
            <th scope="col">Estado</th>
          </tr>
        </thead>
        <tbody>
          <For each={props.rows}>
            {(x) => (
              <tr data-testid="exchange-row" data-id={x.operation_id}>
                <td>
                  <a href={`/receipts/${x.operation_id}`} target="_blank" rel="noopener" data-testid="exchange-receipt">
                    {x.receipt_number}
                  </a>
                </td>
                <td>{when(x.created_at)}</td>
                <td>
                  <A href={`/operaciones/${x.operation_id}`}>
                    {SIDE_LABEL[x.side]} N.º {x.operation_id}
                  </A>
                </td>
                <td class="num">
                  {x.currency} {formatArs(x.amount)}
                </td>
                <td class="num">
                  {formatArs(x.rate)}
                  <Show when={x.rate_source === 'manual'}> (manual)</Show>
                </td>
                <td class="num">{formatArs(x.commission)}</td>
                <td class="num" data-testid="exchange-total">
                  {formatArs(total(x))}
                </td>
                <td>{props.clientName(x.client_id)}</td>
                <td>{props.clientName(x.caja_id)}</td>
                <td>{x.status === 'cancelled' ? 'Anulada' : STATUS_LABEL[x.status]}</td>
              </tr>
            )}
          </For>
        </tbody>
      </table>
      </div>
    </Show>
  )
}
