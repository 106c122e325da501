/**
 * Money is integer micro-USD inside (1 USD = 1_000_000) and a decimal string on the wire:
 * optional minus, digits, optional fraction of 1 to 6 digits. Never a float, never a JSON number.
 */

const MICROS_PER_USD = 1_000_000

export const MONEY_PATTERN = '^-?[0-9]+(\\.[0-9]{1,6})?$'
const MONEY = new RegExp(MONEY_PATTERN)

/** Largest amount we accept: well inside Number.MAX_SAFE_INTEGER micro-USD (~9 billion USD). */
export const MAX_MONEY_MICROS = 1_000_000_000_000_000

export class MoneyFormatError extends Error {}

/** Parses a money decimal string into micro-USD; throws MoneyFormatError on anything else. */
export function parseMoney(value: unknown): number {
  if (typeof value !== 'string') throw new MoneyFormatError('money must be a decimal string')
  if (!MONEY.test(value)) throw new MoneyFormatError(`"${value}" is not a decimal with at most 6 fraction digits`)
  const negative = value.startsWith('-')
  const [whole, frac = ''] = (negative ? value.slice(1) : value).split('.')
  const wholeN = Number(whole)
  const micros = wholeN * MICROS_PER_USD + Number(frac.padEnd(6, '0'))
  if (wholeN > MAX_MONEY_MICROS / MICROS_PER_USD || micros > MAX_MONEY_MICROS) throw new MoneyFormatError(`"${value}" is out of range`)
  return negative && micros !== 0 ? -micros : micros
}

/**
 * parseMoney for a value the Money schema let through (its pattern bounds the form, not the size):
 * null when it is beyond MAX_MONEY_MICROS either way, so the caller answers 422 at its own pointer
 * rather than letting MoneyFormatError become a 500.
 */
export function parseMoneyInRange(value: string): number | null {
  try {
    return parseMoney(value)
  } catch (e) {
    if (e instanceof MoneyFormatError && MONEY.test(value)) return null
    throw e
  }
}

/**
 * Formats micro-USD as a decimal string with at least two fraction digits and no trailing zeros
 * beyond them: 12_500_000 → "12.50", 1_234_567 → "1.234567", -5 → "-0.000005".
 */
export function formatMoney(micros: number): string {
  if (!Number.isSafeInteger(micros)) throw new RangeError(`money must be an integer of micro-USD, got ${micros}`)
  const negative = micros < 0
  const abs = Math.abs(micros)
  const whole = Math.floor(abs / MICROS_PER_USD)
  let frac = String(abs % MICROS_PER_USD)
    .padStart(6, '0')
    .replace(/0+$/, '')
  if (frac.length < 2) frac = frac.padEnd(2, '0')
  return `${negative ? '-' : ''}${whole}.${frac}`
}

export function formatNullableMoney(micros: number | null | undefined): string | null {
  return micros === null || micros === undefined ? null : formatMoney(micros)
}

/**
 * Divides micro-USD by a positive integer, rounding half away from zero; used wherever a price is
 * spread over days or hours so every split is an integer.
 */
export function divideRounded(micros: number, divisor: number): number {
  if (!Number.isSafeInteger(micros) || !Number.isSafeInteger(divisor) || divisor <= 0)
    throw new RangeError('divideRounded takes integers and a positive divisor')
  const q = Math.trunc(micros / divisor)
  const r = micros - q * divisor
  if (Math.abs(r) * 2 >= divisor) return q + Math.sign(micros)
  return q
}

/**
 * An exact non-negative decimal read from outside (a provider's figure: a string, or a JSON number
 * as it was written, e.g. 0.00041234 or 2.5e-7): `units × 10^-scale`, never a float. Null for
 * anything else (negative, NaN, too many digits).
 */
export type Decimal = { units: bigint; scale: number }
const DECIMAL = /^(\d{1,40})(?:\.(\d{1,40}))?(?:[eE]([+-]?\d{1,3}))?$/

export function parseDecimal(value: unknown): Decimal | null {
  if (typeof value === 'number' && !Number.isFinite(value)) return null
  if (typeof value !== 'number' && typeof value !== 'string') return null
  // A JSON number reaches us as a double; its shortest round-trip text is the number as written.
  const m = DECIMAL.exec(typeof value === 'number' ? String(value) : value.trim())
  if (!m) return null
  const frac = m[2] ?? ''
  let scale = frac.length - Number(m[3] ?? 0)
  let units = BigInt(m[1]! + frac)
  if (scale < 0) {
    units *= 10n ** BigInt(-scale)
    scale = 0
  }
  return { units, scale }
}

/**
 * USD as a Decimal → micro-USD, rounded down (toward zero): a figure with more than 6 decimals is
 * never credited above what it says (docs/payments.md, "Rounding").
 */
export function decimalToMicrosFloor(d: Decimal): number | null {
  const micros = d.scale <= 6 ? d.units * 10n ** BigInt(6 - d.scale) : d.units / 10n ** BigInt(d.scale - 6)
  return micros > BigInt(MAX_MONEY_MICROS) ? null : Number(micros)
}

/** micros × num ÷ den for non-negative Decimals, in integers, rounded down (toward zero). */
export function shareOfMicrosFloor(micros: number, num: Decimal, den: Decimal): number | null {
  if (!Number.isSafeInteger(micros) || micros < 0 || den.units === 0n) return null
  // micros × (nu / 10^ns) ÷ (du / 10^ds) = micros × nu × 10^ds ÷ (du × 10^ns)
  const q = (BigInt(micros) * num.units * 10n ** BigInt(den.scale)) / (den.units * 10n ** BigInt(num.scale))
  return q > BigInt(MAX_MONEY_MICROS) ? null : Number(q)
}
