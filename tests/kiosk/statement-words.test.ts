import { describe, expect, test } from 'bun:test'
import { refusal } from '../../kiosk/src/statement/refusal'

describe("the statement page's words for a link that no longer opens", () => {
  test('revoked and expired grants say so, with the day; other refusals say what to do', () => {
    expect(refusal(401, { details: { reason: 'revoked', at: '2026-03-10T15:00:00.000Z' } })).toBe(
      'La casa de cambio revocó este enlace el 10/03/2026: ya no muestra el estado de cuenta. Pídale uno nuevo.',
    )
    // The day in Buenos Aires: 02:00 UTC on the 1st is still the 28th there.
    expect(refusal(401, { details: { reason: 'expired', at: '2026-03-01T02:00:00.000Z' } })).toBe('Este enlace venció el 28/02/2026. Pida uno nuevo a la casa de cambio.')
    expect(refusal(401, { details: { reason: 'expired' } })).toBe('Este enlace venció. Pida uno nuevo a la casa de cambio.')
    expect(refusal(401, null)).toContain('no es válida')
    expect(refusal(404, null)).toContain('no corresponde a ninguna cuenta')
    expect(refusal(400, null)).toContain('«Desde» no puede ser posterior a «Hasta»')
    expect(refusal(503, null)).toContain('Intente de nuevo en unos segundos')
    expect(refusal(0, null)).toContain('Revise la conexión')
  })
})
