/**
 * The one formatter of measured numbers as decimal text (docs/conventions.md "Scalars"): digits,
 * an optional point and fraction, an optional leading minus, and never exponent notation, for
 * any finite number — `Number.prototype.toFixed` writes 1e21 and above as "1e+21", `String()`
 * does so from 1e21 and below 1e-6, and a decimal-string field whose pattern refuses an exponent
 * then fails its own schema (issue 34: one agent's utilisation of 1e308 made GET /servers a 500).
 * Money has its own exact formatter (money.ts, integer micro-USD); everything else that writes a
 * measured number as text comes here.
 */

/**
 * `value` rounded half away from zero to at most `maxFraction` fraction digits (0..20), trailing
 * zeros removed down to `minFraction`; "0" rather than "-0". Null for NaN and ±Infinity, which have
 * no decimal form (callers answer null, or refuse such a value before it is stored).
 */
export function formatDecimal(value: number, maxFraction: number, minFraction = 0): string | null {
  if (!Number.isFinite(value)) return null
  if (!Number.isInteger(maxFraction) || maxFraction < 0 || maxFraction > 20) throw new RangeError('maxFraction must be an integer 0..20')
  const abs = Math.abs(value)
  const scaled = Math.round(abs * 10 ** maxFraction)
  let digits: string
  if (Number.isSafeInteger(scaled)) digits = String(scaled)
  // Past 2^53 a double has no fraction left to round: its shortest decimal form, then the zeros.
  else if (abs >= 2 ** 53 || !Number.isFinite(scaled)) digits = plainInteger(abs) + '0'.repeat(maxFraction)
  else digits = plainInteger(scaled)
  if (/^0*$/.test(digits)) return minFraction > 0 ? `0.${'0'.repeat(minFraction)}` : '0'
  const padded = digits.padStart(maxFraction + 1, '0')
  const whole = padded.slice(0, padded.length - maxFraction)
  let fraction = padded.slice(padded.length - maxFraction).replace(/0+$/, '')
  if (fraction.length < minFraction) fraction = fraction.padEnd(minFraction, '0')
  return `${value < 0 ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`
}

/** The digits of an integer-valued double, from its shortest round-trip text ("1e+308" → "1" and 308 zeros). */
function plainInteger(n: number): string {
  const text = String(n)
  const m = /^(\d+)(?:\.(\d+))?e\+(\d+)$/.exec(text)
  if (!m) return text
  const fraction = m[2] ?? ''
  return m[1]! + fraction + '0'.repeat(Number(m[3]) - fraction.length)
}

/**
 * `value` to `significant` digits (1..21), written as `formatDecimal` writes it: 123456789012345
 * to 12 digits is "123456789012000", 0.000000123456 is "0.000000123456". At most `maxFraction`
 * fraction digits (default 20): anything smaller is 0.
 */
export function formatSignificant(value: number, significant: number, maxFraction = 20): string | null {
  if (!Number.isFinite(value)) return null
  if (value === 0) return '0'
  const rounded = Number(value.toPrecision(significant))
  const exponent = Math.floor(Math.log10(Math.abs(rounded)))
  return formatDecimal(rounded, Math.min(maxFraction, Math.max(0, significant - 1 - exponent)))
}

/**
 * `value` exactly as JavaScript's shortest round-trip text has it (what `String(value)` and JSON
 * write), but never in exponent notation: 1e21 is "1000000000000000000000", 1.5e-7 is
 * "0.00000015". For text read back as a float (Prometheus, CSV cells). Null for NaN and ±Infinity.
 */
export function formatShortest(value: number): string | null {
  if (!Number.isFinite(value)) return null
  if (value === 0) return '0'
  const text = String(Math.abs(value))
  const m = /^(\d+)(?:\.(\d+))?e([+-]\d+)$/.exec(text)
  const sign = value < 0 ? '-' : ''
  if (!m) return sign + text
  const digits = m[1]! + (m[2] ?? '')
  const point = m[1]!.length + Number(m[3])
  if (point <= 0) return `${sign}0.${'0'.repeat(-point)}${digits}`
  if (point >= digits.length) return sign + digits + '0'.repeat(point - digits.length)
  return `${sign}${digits.slice(0, point)}.${digits.slice(point)}`
}
