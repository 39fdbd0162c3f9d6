import { describe, expect, test } from 'bun:test'
import { announcementText, deskToSpanish, digitsToSpanish, numberToSpanish, ticketToSpanish } from '../../kiosk/src/speech'

describe('numberToSpanish', () => {
  test.each([
    [0, 'cero'],
    [1, 'uno'],
    [9, 'nueve'],
    [10, 'diez'],
    [15, 'quince'],
    [16, 'dieciséis'],
    [20, 'veinte'],
    [21, 'veintiuno'],
    [22, 'veintidós'],
    [30, 'treinta'],
    [42, 'cuarenta y dos'],
    [99, 'noventa y nueve'],
    [100, 'cien'],
    [101, 'ciento uno'],
    [115, 'ciento quince'],
    [200, 'doscientos'],
    [500, 'quinientos'],
    [777, 'setecientos setenta y siete'],
    [999, 'novecientos noventa y nueve'],
    [1000, 'mil'],
    [1001, 'mil uno'],
    [2024, 'dos mil veinticuatro'],
    [21000, 'veintiún mil'],
    [31000, 'treinta y un mil'],
    [101000, 'ciento un mil'],
    [999999, 'novecientos noventa y nueve mil novecientos noventa y nueve'],
  ])('%d → %s', (n, words) => {
    expect(numberToSpanish(n)).toBe(words)
  })

  test('out of range or fractional values are read digit by digit', () => {
    expect(numberToSpanish(1_000_000)).toBe('uno cero cero cero cero cero cero')
    expect(numberToSpanish(-3)).not.toContain('undefined')
  })
})

describe('digitsToSpanish', () => {
  test('leading zeros are read one by one, the rest as a number', () => {
    expect(digitsToSpanish('042')).toBe('cero cuarenta y dos')
    expect(digitsToSpanish('001')).toBe('cero cero uno')
    expect(digitsToSpanish('100')).toBe('cien')
    expect(digitsToSpanish('000')).toBe('cero cero cero')
    expect(digitsToSpanish('1234')).toBe('mil doscientos treinta y cuatro')
  })
})

describe('announcement', () => {
  test('the example from the contract', () => {
    expect(announcementText({ ticket: 'A-042', desk: 'Caja 2' })).toBe('Turno A cero cuarenta y dos, caja dos')
  })

  test('multi-letter prefixes are spelled and desk numbers read as numbers', () => {
    expect(ticketToSpanish('CX-105')).toBe('C X ciento cinco')
    expect(deskToSpanish('Ventanilla 12')).toBe('ventanilla doce')
    expect(deskToSpanish('Box 3B')).toBe('box tres b')
    expect(announcementText({ ticket: 'B-999', desk: 'Caja 21' })).toBe('Turno B novecientos noventa y nueve, caja veintiuno')
  })
})
