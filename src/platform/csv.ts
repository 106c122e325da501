import { formatShortest } from './numbers'

/**
 * The one CSV writer (RFC 4180) every CSV answer goes through, so no export can forget either rule:
 *
 * - Formula injection (OWASP "CSV Injection"): a spreadsheet runs a cell that starts with
 *   `=`, `+`, `-`, `@`, a tab or a line break (CR or LF) as a formula. Such a cell gets a leading single
 *   quote, which makes it text. A plain decimal number (`-1.50`, an amount) is left alone: it
 *   cannot carry a formula and must stay a number.
 * - Quoting: a cell holding a comma, a double quote, CR or LF, and every neutralised cell (as
 *   OWASP advises), is wrapped in double quotes with inner quotes doubled.
 *
 * Rows end with CRLF, the last one too.
 */
const FORMULA_START = /^[=+\-@\t\r\n]/
const PLAIN_NUMBER = /^[-+]?\d+(\.\d+)?$/
const NEEDS_QUOTES = /[",\r\n]/

export type CsvValue = string | number | null | undefined

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return ''
  // A number as plain decimal digits, never "1e-7" (which would not even read as a number).
  const text = typeof value === 'number' ? (formatShortest(value) ?? '') : value
  const formula = FORMULA_START.test(text) && !PLAIN_NUMBER.test(text)
  if (!formula && !NEEDS_QUOTES.test(text)) return text
  return `"${formula ? "'" : ''}${text.replace(/"/g, '""')}"`
}

function csvLine(cells: readonly CsvValue[]): string {
  return cells.map(csvCell).join(',')
}

/** A whole document: a header row then the rows, each ending with CRLF. */
export function toCsv(header: readonly string[], rows: readonly (readonly CsvValue[])[]): string {
  return [header, ...rows].map((r) => csvLine(r) + '\r\n').join('')
}
