/**
 * The wire's scalar formats parsed independently of src/ (a test that used the service's own parser
 * could not catch it drifting from docs/conventions.md "Scalars").
 */
const MONEY = /^(-?)(\d+)(?:\.(\d{1,6}))?$/

/** A money decimal string as integer micro-USD; fails on any other shape (JSON numbers included). */
export function micros(text: unknown): number {
  if (typeof text !== 'string') throw new Error(`money must be a string, got ${JSON.stringify(text)}`)
  const m = MONEY.exec(text)
  if (!m) throw new Error(`not a money decimal: ${JSON.stringify(text)}`)
  const v = Number(m[2]) * 1_000_000 + Number((m[3] ?? '').padEnd(6, '0'))
  return m[1] && v !== 0 ? -v : v
}

const TS = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{6})Z$/

/** An RFC 3339 UTC timestamp with microseconds as µs since the epoch; fails on any other shape. */
export function usOf(ts: string): number {
  const m = TS.exec(ts)
  if (!m) throw new Error(`not a microsecond UTC timestamp: ${JSON.stringify(ts)}`)
  return Date.parse(`${m[1]}Z`) * 1000 + Number(m[2])
}

/** µs since the epoch as the wire's timestamp. */
export function iso(us: number): string {
  const ms = Math.floor(us / 1000)
  return `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`
}
