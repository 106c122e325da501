import { describe, expect, test } from 'bun:test'
import { gpuModelName, modelKey, money, price } from '../../web/lib/format'

/**
 * The console's one money formatter (web/lib/format.ts): the wire's decimal strings (up to six
 * decimals) rounded as strings, half away from zero, never through a float.
 */

describe('money for people', () => {
  test('amounts: 2 decimals, thousands separated, a debit with a minus sign', () => {
    expect(money('3271.229078')).toBe('$3,271.23')
    expect(money('140.266632')).toBe('$140.27')
    expect(money('0.004999')).toBe('$0.00')
    expect(money('0.005')).toBe('$0.01')
    expect(money('999999.995')).toBe('$1,000,000.00')
    expect(money('-12.345')).toBe('−$12.35')
    expect(money('-0.001')).toBe('$0.00')
    expect(money('25')).toBe('$25.00')
    expect(money(null)).toBe('—')
    expect(money(undefined, 'not reported')).toBe('not reported')
  })

  test('an amount beyond a float’s exact range keeps every digit', () => {
    expect(money('90071992547409931.125')).toBe('$90,071,992,547,409,931.13')
  })

  test('prices per unit: at least 2 decimals, up to 4 where they matter', () => {
    expect(price('0.110417')).toBe('$0.1104')
    expect(price('0.40')).toBe('$0.40')
    expect(price('0.400000')).toBe('$0.40')
    expect(price('1.075')).toBe('$1.075')
    expect(price('2.2')).toBe('$2.20')
    expect(price('0.23541666')).toBe('$0.2354')
  })

  test('text that is not a decimal is shown as it came', () => {
    expect(money('n/a')).toBe('n/a')
  })
})

describe('GPU model names', () => {
  test("a marketplace's model key in the fleet's words, else in capitals", () => {
    const fleet = ['NVIDIA GeForce RTX 4090', 'NVIDIA H100 80GB HBM3']
    expect(modelKey('NVIDIA GeForce RTX 4090')).toBe('rtx_4090')
    expect(gpuModelName('rtx_4090', fleet)).toBe('NVIDIA GeForce RTX 4090')
    expect(gpuModelName('h100_80gb_hbm3', fleet)).toBe('NVIDIA H100 80GB HBM3')
    expect(gpuModelName('a100_80gb_pcie', fleet)).toBe('A100 80GB PCIE')
    expect(gpuModelName(null, fleet)).toBe('—')
  })
})
