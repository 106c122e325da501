/**
 * One hour's charge split over the servers it charged: equal shares, the remaining micro-dollars to
 * the first servers in the order given (the calculation keeps its ids sorted), so the parts add up
 * exactly to the hour's amount. The per-server CSV, the margin and the spend report all split this way.
 */
export function splitCharge(amountMicros: number, serverIds: readonly string[]): [string, number][] {
  if (serverIds.length === 0) return []
  const sign = amountMicros < 0 ? -1 : 1
  const abs = Math.abs(amountMicros)
  const base = Math.floor(abs / serverIds.length)
  const rest = abs - base * serverIds.length
  return serverIds.map((id, i) => [id, sign * (base + (i < rest ? 1 : 0))])
}
