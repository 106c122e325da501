/**
 * Statistics of asking prices (integer micro-dollars per GPU-hour), one definition for every
 * market view: quartiles by linear interpolation between the closest ranks (the "type 7" rule of
 * R and NumPy's default), rounded half up to the micro-dollar; a price's standing is the share of
 * the market priced below it, counting equal prices half (the mid-rank percentile).
 */

export type PriceSummary = { count: number; min: number; p25: number; median: number; p75: number; max: number }

/** The q-quantile (0..1) of ascending `sorted` (not empty). */
export function quantile(sorted: readonly number[], q: number): number {
  const pos = (sorted.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  const a = sorted[lo]!
  const b = sorted[hi]!
  return Math.round(a + (b - a) * (pos - lo))
}

/** Count, extremes and quartiles of the prices; null for none. */
export function summarize(prices: readonly number[]): PriceSummary | null {
  if (prices.length === 0) return null
  const sorted = [...prices].sort((x, y) => x - y)
  return {
    count: sorted.length,
    min: sorted[0]!,
    p25: quantile(sorted, 0.25),
    median: quantile(sorted, 0.5),
    p75: quantile(sorted, 0.75),
    max: sorted[sorted.length - 1]!,
  }
}

/**
 * Where `price` stands in ascending `sorted`: how many are cheaper, equal and dearer, and the
 * mid-rank percentile 100 × (cheaper + equal / 2) ÷ count, to one decimal (null for an empty market).
 */
export function standing(price: number, sorted: readonly number[]): { cheaper: number; equal: number; dearer: number; percentile: number | null } {
  let cheaper = 0
  let equal = 0
  for (const p of sorted) {
    if (p < price) cheaper++
    else if (p === price) equal++
  }
  const dearer = sorted.length - cheaper - equal
  const percentile = sorted.length === 0 ? null : Math.round((1000 * (cheaper + equal / 2)) / sorted.length) / 10
  return { cheaper, equal, dearer, percentile }
}
