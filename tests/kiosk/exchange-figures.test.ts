/**
 * The console shows the total before the exchange is sent; it must be, to the cent, what the server stores. The
 * screens' arithmetic (kiosk/src/exchange.ts) against the server's own (`localAmount`, server/modules/exchanges), for
 * random amounts and rates of up to six decimals, ties included.
 */
import { describe, expect, test } from 'bun:test'
import Decimal from 'decimal.js'
import fc from 'fast-check'
import { exchangeFigures } from '../../kiosk/src/exchange'
import { localAmount } from '../../server/modules/exchanges/service'
import { formatEsAr } from '../../server/lib/money'
import { formatArs } from '../../kiosk/src/manage/decimal'

/** A positive decimal string with up to `int` integer digits and up to six decimals. */
const decimal = (int: number) =>
  fc
    .tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(int) - 1n }), fc.integer({ min: 0, max: 6 }), fc.bigInt({ min: 0n, max: 999_999n }))
    .map(([i, places, frac]) => (places === 0 ? `${i}` : `${i}.${String(frac).padStart(6, '0').slice(0, places)}`))
    .filter((s) => !new Decimal(s).isZero())

describe('exchangeFigures', () => {
  test('amount × rate matches the server to the cent for random figures', () => {
    fc.assert(
      fc.property(decimal(12), decimal(7), (amount, rate) => {
        const server = localAmount(new Decimal(amount), new Decimal(rate)).toFixed(2)
        expect(exchangeFigures('buy', amount, rate, null).local).toBe(server)
      }),
      { numRuns: 2000 },
    )
  })

  test('half a cent rounds away from zero; the commission comes off a buy and onto a sale', () => {
    expect(exchangeFigures('buy', '0.5', '0.01', null)).toEqual({ local: '0.01', commission: '0.00', total: '0.01' })
    expect(exchangeFigures('buy', '100', '1165.505', null).local).toBe('116550.50')
    expect(exchangeFigures('buy', '1', '1165.505', null).local).toBe('1165.51')
    expect(exchangeFigures('buy', '1500', '1165.5', '2500')).toEqual({ local: '1748250.00', commission: '2500.00', total: '1745750.00' })
    expect(exchangeFigures('sell', '200', '1190.25', '10.005')).toEqual({ local: '238050.00', commission: '10.01', total: '238060.01' })
    // Past what a float holds: every digit kept.
    expect(exchangeFigures('sell', '123456789012.123456', '999999.999999', null).local).toBe('123456789011999999.21')
  })
})

describe('es-AR figures', () => {
  test('the receipt prints an amount exactly as the screens show it', () => {
    fc.assert(
      fc.property(decimal(20), fc.boolean(), (value, negative) => {
        const text = negative ? `-${value}` : value
        expect(formatEsAr(text)).toBe(formatArs(text))
      }),
      { numRuns: 2000 },
    )
    expect(formatEsAr('1165.5')).toBe('1.165,50')
    expect(formatEsAr('1234567890123.123457')).toBe('1.234.567.890.123,123457')
  })
})
