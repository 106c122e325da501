import type { SimState } from './marketplace-a.state'
import type { Endpoint, Permission, SimOwner } from './marketplace-a.types'

/** The host endpoints of the reference's sections 1.1–1.3, with the bodies it documents, and Vast's public offer search. */

interface Ctx {
  state: SimState
  owner: SimOwner
  id: number
  body: Record<string, unknown>
  query: URLSearchParams
  now: number
}

/** The context of an endpoint that answers without a key too; `owner` is set when a valid key came. */
type PublicCtx = Omit<Ctx, 'owner'> & { owner?: SimOwner }

type Route = {
  method: string
  pattern: RegExp
  endpoint: Endpoint
  permission?: Permission
} & ({ anonymous?: false; handle: (ctx: Ctx) => Response } | { anonymous: true; handle: (ctx: PublicCtx) => Response })

export const json = (status: number, body: unknown): Response => Response.json(body, { status })
const bad = (msg: string): Response => json(400, { success: false, error: 'invalid_args', msg })
const noMachine = (): Response => json(404, { success: false, error: 'no_such_machine', msg: 'No such machine id' })
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)
const CATEGORIES = ['power', 'internet', 'disk', 'gpu', 'software', 'other']

/** The fields of a create_asks body and the machine fields they set. */
const ASK_FIELDS = {
  price_gpu: 'listed_gpu_cost',
  price_disk: 'listed_storage_cost',
  price_inetu: 'listed_inet_up_cost',
  price_inetd: 'listed_inet_down_cost',
  price_min_bid: 'min_bid_price',
  credit_discount_max: 'credit_discount_max',
  vol_price: 'listed_volume_cost',
} as const

function createAsks({ state, owner, body, now }: Ctx): Response {
  const minChunk = 'min_chunk' in body ? body.min_chunk : 1
  if (!Number.isInteger(body.machine) || !Number.isInteger(minChunk)) return bad('Invalid machine id or min_chunk')
  const m = state.owned(owner, body.machine)
  if (!m) return json(403, { success: false, error: 'not_authorized', msg: 'Only machine owner can create ask contracts' })
  for (const name of [...Object.keys(ASK_FIELDS), 'end_date', 'vol_size']) {
    if (body[name] !== undefined && body[name] !== null && !isNum(body[name])) return bad(`Invalid ${name}`)
  }
  let duration: number | undefined
  if (typeof body.duration === 'string') {
    const days = /^(\d+(?:\.\d+)?)\s*days?$/.exec(body.duration.trim())
    if (!days) return bad('Invalid duration')
    duration = Number(days[1]) * 86400
  } else if (body.duration !== undefined && body.duration !== null) {
    if (!isNum(body.duration)) return bad('Invalid duration')
    duration = body.duration
  }
  const endDate = body.end_date as number | undefined | null
  if (isNum(endDate) && endDate <= now) return json(200, { success: false, msg: 'end_date must be in the future' })
  const fields = m.fields as Record<string, unknown>
  for (const [name, field] of Object.entries(ASK_FIELDS)) if (isNum(body[name])) fields[field] = body[name]
  fields.listed = true
  fields.listed_min_gpu_count = minChunk
  if (duration !== undefined) fields.duration = duration
  let extended = 0
  if (isNum(endDate)) {
    fields.end_date = endDate
    for (const r of state.rentalsOf(m.id)) {
      if (r.end_date !== undefined && r.end_date < endDate) {
        r.end_date = endDate
        extended++
      }
    }
  }
  return json(200, { success: true, extended })
}

function unlist({ state, owner, id }: Ctx): Response {
  const m = state.owned(owner, id)
  if (!m) return noMachine()
  m.fields.listed = false
  return json(200, { success: true, machine_id: id, user_id: owner.id })
}

function minbid({ state, owner, id, body }: Ctx): Response {
  const m = state.owned(owner, id)
  if (!m) return noMachine()
  if (!isNum(body.price) || body.price < 0) return bad('Invalid price')
  m.fields.min_bid_price = body.price
  return json(200, { success: true, you_sent: body })
}

function dnotify({ state, owner, id, body, now }: Ctx): Response {
  const m = state.owned(owner, id)
  if (!m) return noMachine()
  const { sdate, duration, maintenance_category: category } = body
  if (!isNum(sdate) || sdate <= now || sdate > now + 366 * 86400) return bad('sdate must be in the future and within a year')
  if (!isNum(duration) || Math.floor(duration) < 1) return bad('duration must be at least 1 hour')
  if (typeof category !== 'string' || !CATEGORIES.includes(category)) return bad(`maintenance_category must be one of ${CATEGORIES.join(', ')}`)
  const window = {
    id: state.newWindowId(),
    machine_id: id,
    start_time: sdate,
    duration_hours: Math.floor(duration),
    maintenance_category: category,
    ...(typeof body.maintenance_reason === 'string' ? { maintenance_reason: body.maintenance_reason } : {}),
  }
  m.fields.machine_maintenance = [...state.windowsOf(m), window]
  return json(200, { success: true, you_sent: `${state.rentalsOf(id).length} notifications sent` })
}

function cancelMaint({ state, owner, id, now }: Ctx): Response {
  const m = state.owned(owner, id)
  if (!m) return json(404, { success: false, msg: 'No such machine id', machine_id: id })
  const n = state.windowsOf(m).length
  m.fields.machine_maintenance = null
  return json(200, { success: true, ctime: now, machine_id: id, msg: `deleted ${n} scheduled maintenance window(s) on machine ${id}` })
}

function maintenances({ state, owner, query }: Ctx): Response {
  let ids: unknown
  try {
    ids = JSON.parse(query.get('machine_ids') ?? 'null')
  } catch {
    return bad('Invalid machine_ids')
  }
  const wanted = Array.isArray(ids) ? ids : null
  const out = [...state.machines.values()]
    .filter((m) => m.ownerId === owner.id && (!wanted || wanted.includes(m.id)))
    .flatMap((m) => state.windowsOf(m))
    .map((w) => ({ ...w, end_time: w.start_time + w.duration_hours * 3600 }))
  return json(200, out)
}

function createBids({ state, owner, body }: Ctx): Response {
  const m = state.owned(owner, body.machine)
  if (!m) return json(403, { success: false, error: 'not_authorized', msg: 'Only machine owner can create bid contracts' })
  if (!isNum(body.price_gpu)) return bad('Invalid price_gpu')
  for (const name of ['price_inetu', 'price_inetd']) if (body[name] !== undefined && body[name] !== null && !isNum(body[name])) return bad(`Invalid ${name}`)
  if (typeof body.image !== 'string' || body.image.trim() === '') return bad('Invalid image')
  Object.assign(m.fields, { bid_gpu_cost: body.price_gpu, bid_image: body.image, bid_image_args: String(body.args ?? '') })
  return json(200, { success: true })
}

function removeDefjob({ state, owner, id }: Ctx): Response {
  const m = state.owned(owner, id)
  if (!m) return noMachine()
  Object.assign(m.fields, { bid_gpu_cost: null, bid_image: null, bid_image_args: null })
  return json(200, { success: true })
}

function earnings({ state, owner, query, now }: Ctx): Response {
  const today = Math.floor(now / 86400)
  const num = (name: string): number | undefined => (query.get(name) !== null && query.get(name) !== 'null' ? Number(query.get(name)) : undefined)
  const lastDays = num('last_days')
  const sday = Math.floor(num('sday') ?? (lastDays !== undefined ? today - lastDays : today - 1))
  const eday = Math.floor(num('eday') ?? today)
  const machid = num('machid')
  if ([sday, eday].some(Number.isNaN) || (machid !== undefined && Number.isNaN(machid))) return bad('Invalid sday, eday or machid')
  const rows = (state.earnings.get(owner.id) ?? []).filter((r) => r.day >= sday && r.day <= eday && (machid === undefined || r.machine_id === machid))
  const sum = (group: (r: (typeof rows)[0]) => number, key: string) => {
    const acc = new Map<number, Record<string, number>>()
    for (const r of rows) {
      const a = acc.get(group(r)) ?? { [key]: group(r), gpu_earn: 0, sto_earn: 0, bwu_earn: 0, bwd_earn: 0 }
      for (const f of ['gpu_earn', 'sto_earn', 'bwu_earn', 'bwd_earn'] as const) a[f] += r[f]
      acc.set(group(r), a)
    }
    return [...acc.values()]
  }
  const total = (f: 'gpu_earn' | 'sto_earn' | 'bwu_earn' | 'bwd_earn') => rows.reduce((s, r) => s + r[f], 0)
  return json(200, {
    sday,
    eday,
    summary: { total_gpu: total('gpu_earn'), total_stor: total('sto_earn'), total_bwu: total('bwu_earn'), total_bwd: total('bwd_earn') },
    username: owner.username ?? owner.email,
    email: owner.email,
    current: owner.balance ?? { balance: 0, service_fee: 0, total: 0, credit: 0 },
    per_machine: sum((r) => r.machine_id, 'machine_id'),
    per_day: sum((r) => r.day, 'day'),
  })
}

function invoices({ state, owner, query }: Ctx): Response {
  let when: { gte?: number; lte?: number } = {}
  try {
    when = JSON.parse(query.get('select_filters') ?? '{}').when ?? {}
  } catch {
    return bad('Invalid select_filters')
  }
  const all = (state.invoices.get(owner.id) ?? []).filter(
    (i) => (when.gte === undefined || i.start >= when.gte) && (when.lte === undefined || i.start <= when.lte),
  )
  const from = Number(query.get('after_token') ?? 0) || 0
  const limit = Number(query.get('limit') ?? 20) || 20
  const results = all.slice(from, from + limit)
  const next = from + limit < all.length ? String(from + limit) : null
  return json(200, { success: true, count: results.length, total: all.length, next_token: next, results })
}

/** The query keys the simulated search honours besides `type` and `limit`. Everything else is ignored, Vast-cli's defaults too. */
const SEARCH_FILTERS = ['rentable', 'gpu_name', 'num_gpus'] as const
const OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'in', 'notin']
/** The CLI asks users to write `RTX_4090` for `RTX 4090`; both sides are compared with spaces. */
const spaced = (v: unknown): unknown => (typeof v === 'string' ? v.replaceAll('_', ' ') : Array.isArray(v) ? v.map(spaced) : v)

/** Whether an offer's value passes one operator; an offer without the field passes none (as SQL's NULL). */
function passes(have: unknown, op: string, want: unknown): boolean {
  if (have === undefined) return false
  if (op === 'eq') return have === want
  if (op === 'neq') return have !== want
  if (op === 'in' || op === 'notin') return (want as unknown[]).includes(have) === (op === 'in')
  if (!isNum(have) || !isNum(want)) return false
  return op === 'gt' ? have > want : op === 'gte' ? have >= want : op === 'lt' ? have < want : have <= want
}

/**
 * `POST /api/v0/bundles/` (a JSON query, what vast-cli's `search offers` sends) and the older
 * `GET /api/v0/bundles/?q=<JSON>`: `{"offers": [...]}`. No key needed. A malformed value of an
 * honoured key is 400 (the notes do not say what Vast does; strict catches a test's typo).
 */
function bundles({ state, body, query }: PublicCtx): Response {
  let q: unknown = body
  if (query.has('q')) {
    try {
      q = JSON.parse(query.get('q') ?? '')
    } catch {
      return bad('Invalid q')
    }
  }
  if (!q || typeof q !== 'object' || Array.isArray(q)) return bad('Invalid q')
  const { type = 'on-demand', limit } = q as Record<string, unknown>
  if (!['on-demand', 'reserved', 'bid', 'interruptible'].includes(type as string)) return bad('Invalid type')
  if (limit !== undefined && limit !== null && !(Number.isInteger(limit) && (limit as number) >= 0)) return bad('Invalid limit')
  const filters: [string, string, unknown][] = []
  for (const field of SEARCH_FILTERS) {
    const filter = (q as Record<string, unknown>)[field]
    if (filter === undefined) continue
    if (!filter || typeof filter !== 'object' || Array.isArray(filter)) return bad(`Invalid ${field}`)
    for (const [op, want] of Object.entries(filter)) {
      if (!OPS.includes(op) || ((op === 'in' || op === 'notin') && !Array.isArray(want))) return bad(`Invalid ${field}`)
      filters.push([field, op, field === 'gpu_name' ? spaced(want) : want])
    }
  }
  const offers = state
    .offers(type === 'bid' || type === 'interruptible' ? 'bid' : 'on-demand')
    .filter((o) => filters.every(([field, op, want]) => passes(field === 'gpu_name' ? spaced(o[field]) : o[field], op, want)))
  return json(200, { offers: isNum(limit) ? offers.slice(0, limit) : offers })
}

const ok = (): Response => json(200, { success: true })
const owned = (then: (ctx: Ctx) => Response) => (ctx: Ctx) => (ctx.state.owned(ctx.owner, ctx.id) ? then(ctx) : noMachine())
const M = '/api/v0/machines'

export const ROUTES: Route[] = [
  { method: 'POST', pattern: /^\/api\/v0\/bundles$/, endpoint: 'bundles', anonymous: true, handle: bundles },
  { method: 'GET', pattern: /^\/api\/v0\/bundles$/, endpoint: 'bundles', anonymous: true, handle: bundles },
  { method: 'GET', pattern: /^\/api\/v0\/users\/current$/, endpoint: 'user', handle: userCurrent },
  { method: 'GET', pattern: /^\/api\/v0\/users\/me\/machine-earnings$/, endpoint: 'earnings', permission: 'billing_read', handle: earnings },
  { method: 'GET', pattern: /^\/api\/v1\/invoices$/, endpoint: 'invoices', permission: 'billing_read', handle: invoices },
  { method: 'GET', pattern: new RegExp(`^${M}$`), endpoint: 'machines', permission: 'machine_read', handle: listMachines },
  { method: 'GET', pattern: new RegExp(`^${M}/maintenances$`), endpoint: 'maintenances', permission: 'machine_read', handle: maintenances },
  { method: 'PUT', pattern: new RegExp(`^${M}/create_asks$`), endpoint: 'create_asks', permission: 'machine_write', handle: createAsks },
  { method: 'PUT', pattern: new RegExp(`^${M}/create_bids$`), endpoint: 'create_bids', permission: 'machine_write', handle: createBids },
  { method: 'PUT', pattern: new RegExp(`^${M}/defrag_offers$`), endpoint: 'defrag', permission: 'machine_write', handle: ok },
  { method: 'GET', pattern: new RegExp(`^${M}/(\\d+)$`), endpoint: 'machine', permission: 'machine_read', handle: oneMachine },
  { method: 'GET', pattern: new RegExp(`^${M}/(\\d+)/reports$`), endpoint: 'reports', permission: 'machine_read', handle: owned(reports) },
  { method: 'DELETE', pattern: new RegExp(`^${M}/(\\d+)/asks$`), endpoint: 'unlist', permission: 'machine_write', handle: unlist },
  { method: 'PUT', pattern: new RegExp(`^${M}/(\\d+)/minbid$`), endpoint: 'minbid', permission: 'machine_write', handle: minbid },
  { method: 'PUT', pattern: new RegExp(`^${M}/(\\d+)/dnotify$`), endpoint: 'dnotify', permission: 'machine_write', handle: dnotify },
  { method: 'PUT', pattern: new RegExp(`^${M}/(\\d+)/cancel_maint$`), endpoint: 'cancel_maint', permission: 'machine_write', handle: cancelMaint },
  { method: 'DELETE', pattern: new RegExp(`^${M}/(\\d+)/defjob$`), endpoint: 'defjob', permission: 'machine_write', handle: removeDefjob },
  { method: 'PUT', pattern: new RegExp(`^${M}/(\\d+)/cleanup$`), endpoint: 'cleanup', permission: 'machine_write', handle: owned(ok) },
  { method: 'POST', pattern: new RegExp(`^${M}/(\\d+)/force_delete$`), endpoint: 'force_delete', permission: 'machine_write', handle: owned(forceDelete) },
]

function userCurrent({ owner }: Ctx): Response {
  const { keys: _keys, balance: _balance, ...user } = owner
  return json(200, user)
}

function listMachines({ state, owner }: Ctx): Response {
  const mine = [...state.machines.values()].filter((m) => m.ownerId === owner.id)
  return json(200, { machines: mine.map((m) => state.json(m)) })
}

function oneMachine({ state, owner, id }: Ctx): Response {
  const m = state.owned(owner, id)
  return m ? json(200, [state.json(m)]) : noMachine()
}

/**
 * `GET /api/v0/machines/{id}/reports/` (machine_read, threshold 1.2 s): Vast's OpenAPI says "the 20
 * most recent problem reports ... accessible only to the machine owner", a bare list of
 * `{problem, message, created_at}`, newest first here (the order is not documented). A JSON body
 * (vast-cli sends `{"machine_id": id}`) is accepted and ignored.
 */
function reports({ state, id }: Ctx): Response {
  const all = [...(state.reports.get(id) ?? [])].sort((a, b) => b.created_at - a.created_at)
  return json(200, all.slice(0, 20))
}

function forceDelete({ state, id }: Ctx): Response {
  state.removeMachine(id)
  return json(200, { success: true })
}
