import { describe, expect, test } from 'bun:test'
import { csvCell, toCsv } from '../../src/platform/csv'

/** The one CSV writer: RFC 4180 quoting and OWASP "CSV Injection" neutralisation. */

describe('csvCell', () => {
  test.each([
    ['=HYPERLINK("http://evil","x")', `"'=HYPERLINK(""http://evil"",""x"")"`],
    ["+cmd|' /C calc'!A0", `"'+cmd|' /C calc'!A0"`],
    ['-2+3+cmd|calc', `"'-2+3+cmd|calc"`],
    ['@SUM(1+1)*cmd|calc', `"'@SUM(1+1)*cmd|calc"`],
    ['\t=1+2', `"'\t=1+2"`],
    ['\r=1+2', `"'\r=1+2"`],
    ['\n=1+2', `"'\n=1+2"`],
  ])('a cell starting a formula (%j) gets a leading quote and is quoted', (input, expected) => {
    expect(csvCell(input)).toBe(expected)
  })

  test.each([
    ['rig-07', 'rig-07'],
    ['beta, with comma', '"beta, with comma"'],
    ['gamma "quoted"', '"gamma ""quoted"""'],
    ["O'Brien's rig", "O'Brien's rig"],
    ['a=b', 'a=b'],
    ['-1.50', '-1.50'],
    ['+3', '+3'],
    ['12.000000', '12.000000'],
    ['', ''],
  ])('an ordinary cell (%j) is written as RFC 4180 says, numbers untouched', (input, expected) => {
    expect(csvCell(input)).toBe(expected)
  })

  test('numbers and empty values', () => {
    expect(csvCell(7)).toBe('7')
    expect(csvCell(-7)).toBe('-7')
    expect(csvCell(null)).toBe('')
    expect(csvCell(undefined)).toBe('')
  })
})

test('toCsv writes a header and rows, each ending with CRLF', () => {
  expect(
    toCsv(
      ['a', 'b'],
      [
        ['=x', 1],
        ['y', '2'],
      ],
    ),
  ).toBe(`a,b\r\n"'=x",1\r\ny,2\r\n`)
})
