/** How the console writes what the API sends: money stays the decimal string it came as. */

export function money(usd: string | null | undefined, empty = '—'): string {
  if (usd === null || usd === undefined) return empty
  const neg = usd.startsWith('-')
  const [int = '0', frac = ''] = (neg ? usd.slice(1) : usd).split('.')
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  const f = frac.replace(/0+$/, '').padEnd(2, '0')
  return `${neg ? '−' : ''}$${grouped}.${f}`
}

export function dateTime(ts: string | null | undefined, empty = '—'): string {
  if (!ts) return empty
  const d = new Date(ts)
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' })
}

export function ago(ts: string | null | undefined, now = Date.now(), empty = 'never'): string {
  if (!ts) return empty
  const s = Math.round((now - new Date(ts).getTime()) / 1000)
  if (s < 5) return 'just now'
  if (s < 60) return `${s} s ago`
  if (s < 3600) return `${Math.round(s / 60)} min ago`
  if (s < 86400) return `${Math.round(s / 3600)} h ago`
  return `${Math.round(s / 86400)} d ago`
}

export const num = (v: number | string | null | undefined, unit = '', empty = '—') =>
  v === null || v === undefined || v === '' ? empty : `${typeof v === 'number' ? Math.round(v * 10) / 10 : v}${unit}`

export const MARKETPLACES = { marketplace_a: 'Marketplace A (Vast.ai)', marketplace_b: 'Marketplace B (Clore.ai)' } as const
export type Marketplace = keyof typeof MARKETPLACES
export const marketplaceName = (m: string | null | undefined) => (m ? (MARKETPLACES[m as Marketplace] ?? m) : '—')

/** A day (YYYY-MM-DD) in UTC, `days` before today. */
export const utcDay = (daysAgo = 0) => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10)
