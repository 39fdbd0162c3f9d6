import { describe, expect, test } from 'bun:test'
import Decimal from 'decimal.js'
import { formatArs, lessThan, parseArs } from '../../kiosk/src/manage/decimal'

describe('es-AR money input', () => {
  test('dot groups thousands, comma marks decimals; the result is an exact decimal string', () => {
    expect(parseArs('1.165,50')).toEqual({ ok: true, value: '1165.50' })
    expect(parseArs(' 1165,5 ')).toEqual({ ok: true, value: '1165.5' })
    expect(parseArs('1.234.567,123456')).toEqual({ ok: true, value: '1234567.123456' })
    expect(parseArs('1.165')).toEqual({ ok: true, value: '1165' })
    expect(parseArs('0,000001')).toEqual({ ok: true, value: '0.000001' })
    expect(parseArs('007')).toEqual({ ok: true, value: '7' })
  })

  test('the wrong separator, other text, too many decimals or nothing get a message in words', () => {
    for (const wrong of ['1165.50', '1,165.50', '1.16,5', '1,2,3'])
      expect(parseArs(wrong)).toEqual({ ok: false, message: expect.stringContaining('Separador equivocado') })
    expect(parseArs('doce')).toEqual({ ok: false, message: 'Escriba un número, por ejemplo 1.165,50.' })
    expect(parseArs('')).toEqual({ ok: false, message: 'Falta el valor.' })
    expect(parseArs('-5')).toEqual({ ok: false, message: 'El valor no puede ser negativo.' })
    expect(parseArs('1,1234567')).toEqual({ ok: false, message: 'Como máximo 6 decimales.' })
  })

  test('API decimals are shown back the way they are typed, without float rounding', () => {
    expect(formatArs('1165.5')).toBe('1.165,50')
    expect(formatArs('1165')).toBe('1.165,00')
    expect(formatArs('1234567.123456')).toBe('1.234.567,123456')
    expect(formatArs('0.1')).toBe('0,10')
    // 9007199254740993 is not a float; the text keeps it.
    expect(formatArs('9007199254740993.25')).toBe('9.007.199.254.740.993,25')
    for (const typed of ['1.165,50', '0,000001', '12.345.678,9']) {
      const parsed = parseArs(typed)
      const again = parsed.ok ? parseArs(formatArs(parsed.value)) : parsed
      expect(parsed.ok && again.ok && new Decimal(again.value).eq(parsed.value)).toBe(true)
    }
  })

  test('sell below buy is found exactly', () => {
    expect(lessThan('1165.499999', '1165.5')).toBe(true)
    expect(lessThan('1165.50', '1165.5')).toBe(false)
  })
})
