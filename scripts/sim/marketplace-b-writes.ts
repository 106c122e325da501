// Marketplace_b simulator: the write endpoints of Clore.ai (reference section 2.3). Each returns the
// body to send; `code` 2 is INVALID INPUT DATA and 6 an error named in `error`.

import { COINS, type SimRental, type SimServer } from './marketplace-b-state'

type Json = Record<string, unknown>

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * `POST /v1/set_server_settings`: the documented minimum `{name, availability, mrl, on_demand, spot}`
 * (BTC per day) and the per-currency form. Everything is validated before anything is applied; an
 * unknown key is invalid input (the reference does not say what Clore does; strict catches typos).
 */
export function setServerSettings(body: Json, servers: SimServer[]): Json {
  const server = servers.find((s) => s.name === body.name)
  if (typeof body.name !== 'string' || !server) return { code: 2 }
  const apply: ((s: SimServer) => void)[] = []
  const price = (field: 'pricing' | 'min_spot_pricing', coin: string, v: number) => (s: SimServer) => {
    s[field] = { ...(s[field] ?? {}), [coin]: v }
  }
  for (const [key, v] of Object.entries(body)) {
    if (key === 'name') continue
    if (key === 'availability' && typeof v === 'boolean') apply.push((s) => (s.visibility = v ? 'public' : 'hidden'))
    else if (key === 'mrl' && Number.isInteger(v) && (v as number) > 0) apply.push((s) => (s.mrl = v as number))
    else if (key === 'on_demand' && isNum(v)) apply.push(price('pricing', 'bitcoin', v))
    else if (key === 'spot' && isNum(v)) apply.push(price('min_spot_pricing', 'bitcoin', v))
    else if (key === 'autoprice' && isObj(v) && Object.entries(v).every(([c, a]) => isCoin(c) && (a === 'usd' || a === false)))
      apply.push((s) => (s.autoprice = { ...(s.autoprice ?? {}), ...(v as Record<string, 'usd' | false>) }))
    else if (key === 'usd_pricing' && isObj(v) && Object.entries(v).every(([c, p]) => isCoin(c) && isObj(p) && isNum(p.on_demand) && isNum(p.spot)))
      apply.push((s) => (s.usd_pricing = { ...(s.usd_pricing ?? {}), ...(v as Record<string, { on_demand: number; spot: number }>) }))
    else {
      const m = /^(.+)_(on_demand|spot)$/.exec(key)
      const e = /^enabled-(.+)$/.exec(key)
      if (m && isCoin(m[1]) && isNum(v)) apply.push(price(m[2] === 'on_demand' ? 'pricing' : 'min_spot_pricing', m[1], v))
      else if (e && isCoin(e[1]) && typeof v === 'boolean')
        apply.push((s) => {
          const rest = (s.allowed_currencies ?? []).filter((c) => c !== e[1])
          s.allowed_currencies = v ? [...rest, e[1]] : rest
        })
      else return { code: 2 }
    }
  }
  for (const f of apply) f(server)
  return { code: 0 }
}

function isCoin(c: string): boolean {
  return (COINS as readonly string[]).includes(c)
}

interface SpotRules {
  lowerIntervalMs: number
  maxLowerStep: Record<string, number>
}

/**
 * `POST /v1/set_spot_price` `{order_id, desired_price}` on a spot order the caller placed as a
 * renter. Raising is always allowed; lowering obeys the documented step and interval limits.
 */
export function setSpotPrice(body: Json, order: SimRental | undefined, rules: SpotRules, now: number): Json {
  if (!order?.spot || order.expired || !isNum(body.desired_price)) return { code: 2 }
  const current = order.price ?? 0
  const desired = body.desired_price
  if (desired < current) {
    const wait = order.lastLoweredAt === undefined ? 0 : order.lastLoweredAt + rules.lowerIntervalMs - now
    if (wait > 0) return { code: 6, error: 'can_lower_every_600_seconds', time_to_lowering: Math.ceil(wait / 1000) }
    const maxStep = order.currency === undefined ? undefined : rules.maxLowerStep[order.currency]
    if (maxStep !== undefined && current - desired > maxStep + 1e-12) return { code: 6, error: 'exceeded_max_step', max_step: maxStep }
    order.lastLoweredAt = now
  }
  order.price = desired
  return { code: 0 }
}

/** `POST /v1/cancel_order` `{id, issue?}`: ends an order the caller placed. */
export function cancelOrder(order: SimRental | undefined): Json {
  if (!order || order.expired) return { code: 2 }
  order.expired = true
  return { code: 0 }
}
