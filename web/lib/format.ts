/**
 * How the console writes what the API sends. Money arrives as a decimal string (USD, up to six
 * decimals: docs/conventions.md) and is never turned into a float here: it is rounded as a string,
 * half away from zero, to 2 decimals for amounts and to at most 4 for prices per GPU-hour or kWh
 * (web/ui/money.tsx puts the exact wire value in the hover title; CSV downloads carry it as sent).
 */

type Decimal = { neg: boolean; int: string; frac: string }

/** "3271.229078" at 2 places → { int: "3271", frac: "23" }; null when the text is not a decimal. */
function round(text: string, places: number): Decimal | null {
  const m = /^([+-]?)(\d+)(?:\.(\d*))?$/.exec(text.trim())
  if (!m) return null
  const [, sign = '', int = '0', frac = ''] = m
  let scaled = BigInt(int + frac.slice(0, places).padEnd(places, '0'))
  if ((frac[places] ?? '0') >= '5') scaled += 1n
  const digits = scaled.toString().padStart(places + 1, '0')
  const out = { int: digits.slice(0, digits.length - places), frac: places ? digits.slice(-places) : '' }
  return { neg: sign === '-' && scaled !== 0n, ...out }
}

const group = (int: string) => int.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
const written = (d: Decimal) => `${d.neg ? '−' : ''}$${group(d.int)}${d.frac ? `.${d.frac}` : ''}`

/** An amount of USD for people: "$3,271.23" (2 decimals, thousands separated, "−" for a debit). */
export function money(usd: string | null | undefined, empty = '—'): string {
  if (usd === null || usd === undefined) return empty
  const d = round(usd, 2)
  return d ? written(d) : usd
}

/** A price per unit (GPU-hour, kWh): at least 2 decimals, up to 4 where the price has them ("$0.1104"). */
export function price(usd: string | null | undefined, empty = '—'): string {
  if (usd === null || usd === undefined) return empty
  const d = round(usd, 4)
  if (!d) return usd
  return written({ ...d, frac: d.frac.replace(/0{1,2}$/, '') })
}

/** The zone dates and times are shown in: the member's profile time zone (Settings), set at sign-in. */
let displayZone: string | undefined
export function setDisplayZone(zone: string | null | undefined): void {
  displayZone = zone || undefined
  try {
    new Intl.DateTimeFormat(undefined, { timeZone: displayZone })
  } catch {
    displayZone = undefined
  }
}
export const shownZone = () => displayZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone

export function dateTime(ts: string | null | undefined, empty = '—'): string {
  if (!ts) return empty
  const d = new Date(ts)
  return Number.isNaN(d.getTime()) ? ts : d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: displayZone })
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

const VENDOR_WORDS = new Set(['nvidia', 'geforce', 'amd', 'radeon', 'intel', 'tesla'])
/**
 * The marketplaces' model key of a GPU name ("NVIDIA GeForce RTX 4090" → "rtx_4090"): the rule of
 * src/modules/marketplaces/adapters/gpu-model.ts, so the console can name a market's key the way the fleet does.
 */
export function modelKey(name: string): string {
  return name
    .toLowerCase()
    .split(/[\s_]+/)
    .filter((w) => w !== '' && !VENDOR_WORDS.has(w))
    .join('_')
}

/**
 * A marketplace model key in the fleet's words: the full name one of the member's servers reports
 * ("NVIDIA GeForce RTX 4090"), else the key's words in capitals ("A100 80GB PCIE").
 */
export function gpuModelName(key: string | null | undefined, fleetModels: string[], empty = '—'): string {
  if (!key) return empty
  const known = fleetModels.find((name) => modelKey(name) === key)
  return (
    known ??
    key
      .split('_')
      .map((w) => w.toUpperCase())
      .join(' ')
  )
}
