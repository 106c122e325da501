import type { EarningRow, Invoice, MachineFields, MaintenanceWindow, OfferFields, Report, SimKey, SimOwner, SimRental } from './marketplace-a.types'

interface StoredMachine {
  id: number
  ownerId: number
  /** The id of the machine's offer in the public search; kept while the machine exists, so a test can rely on it. */
  askId: number
  fields: MachineFields
  /** Set once a rental was attached: the rental counters, occupancy and client_end_date are derived from then on. */
  derive: boolean
}

const TOKEN = { on_demand: 'D', interruptible: 'I', reserved: 'R' } as const

/** Search-offer field ← machine field, for the fields an offer shows as the machine has them. */
const OFFER_COPIES = {
  gpu_name: 'gpu_name',
  num_gpus: 'num_gpus',
  reliability2: 'reliability2',
  reliability: 'reliability2',
  verification: 'verification',
  geolocation: 'geolocation',
  gpu_ram: 'gpu_ram',
  disk_space: 'disk_space',
  storage_cost: 'listed_storage_cost',
  inet_up_cost: 'listed_inet_up_cost',
  inet_down_cost: 'listed_inet_down_cost',
  inet_up: 'inet_up',
  inet_down: 'inet_down',
  cuda_max_good: 'cuda_max_good',
  direct_port_count: 'direct_port_count',
  pcie_bw: 'pcie_bw',
  gpu_total_ram: 'gpu_total_ram',
  cpu_ram: 'cpu_ram',
  cpu_cores: 'cpu_cores',
} as const

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

/** The simulator's world: owners and their keys, machines, rentals, reports, earnings and invoices. */
export class SimState {
  readonly owners = new Map<number, SimOwner>()
  private readonly keys = new Map<string, { owner: SimOwner; key: SimKey }>()
  readonly machines = new Map<number, StoredMachine>()
  readonly rentals = new Map<number, SimRental & { machineId: number }>()
  readonly reports = new Map<number, Report[]>()
  readonly earnings = new Map<number, EarningRow[]>()
  readonly invoices = new Map<number, Invoice[]>()
  /** Other hosts' offers a test put on the market, by ask id, in the order added. */
  readonly marketOffers = new Map<number, Partial<OfferFields>>()
  private nextId = 1
  /** The simulator's now in unix seconds (a test may tie it to the service's test clock). */
  nowS: () => number = () => Date.now() / 1000
  /** Ask ids count apart from the other ids so that adding a machine never shifts a rental's or a window's id. */
  private nextAskId = 900_001

  addOwner(owner: SimOwner): void {
    this.owners.set(owner.id, owner)
    for (const key of owner.keys) this.keys.set(key.key, { owner, key })
  }

  /** Changes a key's restrictions (permission groups, 2FA, session expiry) in place. */
  updateKey(key: string, patch: Partial<Omit<SimKey, 'key'>>): void {
    const held = this.keys.get(key)
    if (!held) throw new Error('marketplace-a sim: no such key')
    Object.assign(held.key, patch)
  }

  /** Deletes a key, as the owner does in the console: from then on it is an invalid user key. */
  revokeKey(key: string): void {
    const held = this.keys.get(key)
    if (!held) return
    this.keys.delete(key)
    held.owner.keys = held.owner.keys.filter((k) => k.key !== key)
  }

  keyOf(key: string): { owner: SimOwner; key: SimKey } | undefined {
    return this.keys.get(key)
  }

  ownerOf(ref: number | string): SimOwner {
    const owner = typeof ref === 'number' ? this.owners.get(ref) : this.keys.get(ref)?.owner
    if (!owner) throw new Error(`marketplace-a sim: no owner ${typeof ref === 'number' ? ref : 'for that key'}`)
    return owner
  }

  putMachine(ownerRef: number | string, id: number, fields: MachineFields): void {
    const owner = this.ownerOf(ownerRef)
    const old = this.machines.get(id)
    this.machines.set(id, { id, ownerId: owner.id, askId: old?.askId ?? this.nextAskId++, fields: { ...fields }, derive: old?.derive ?? false })
  }

  /** Merges `patch` into the machine; a key set to `undefined` makes the field absent again. */
  updateMachine(id: number, patch: MachineFields): void {
    const m = this.machine(id)
    for (const [k, v] of Object.entries(patch)) {
      if (v === undefined) delete (m.fields as Record<string, unknown>)[k]
      else (m.fields as Record<string, unknown>)[k] = v
    }
  }

  removeMachine(id: number): void {
    this.machines.delete(id)
    for (const [rid, r] of this.rentals) if (r.machineId === id) this.rentals.delete(rid)
  }

  machine(id: number): StoredMachine {
    const m = this.machines.get(id)
    if (!m) throw new Error(`marketplace-a sim: no machine ${id}`)
    return m
  }

  /** The caller's machine, or undefined when it does not exist or belongs to someone else. */
  owned(owner: SimOwner, id: unknown): StoredMachine | undefined {
    const m = typeof id === 'number' ? this.machines.get(id) : undefined
    return m && m.ownerId === owner.id ? m : undefined
  }

  addRental(machineId: number, rental: SimRental): number {
    this.machine(machineId).derive = true
    const id = this.nextId++
    this.rentals.set(id, { ...rental, machineId })
    return id
  }

  updateRental(id: number, patch: Partial<SimRental>): void {
    const r = this.rentals.get(id)
    if (!r) throw new Error(`marketplace-a sim: no rental ${id}`)
    Object.assign(r, patch)
  }

  /** The machine's rentals; one whose `end_date` has passed has ended (its instance is gone, as on Vast) and is dropped. */
  rentalsOf(machineId: number): (SimRental & { machineId: number })[] {
    const now = this.nowS()
    for (const [id, r] of this.rentals) if (r.end_date !== undefined && r.end_date <= now) this.rentals.delete(id)
    return [...this.rentals.values()].filter((r) => r.machineId === machineId)
  }

  newWindowId(): number {
    return this.nextId++
  }

  windowsOf(m: StoredMachine): MaintenanceWindow[] {
    return Array.isArray(m.fields.machine_maintenance) ? m.fields.machine_maintenance : []
  }

  /** Puts another host's offer on the market; an offer with the id of one already there replaces it. */
  addMarketOffer(offer: Partial<OfferFields>): number {
    const id = offer.id ?? this.nextAskId++
    this.marketOffers.set(id, { ...offer, id })
    return id
  }

  /**
   * What Vast's offer search sees: one whole-machine offer per listed machine that has an on-demand
   * price (Vast also splits a machine into chunks of `listed_min_gpu_count`; the simulator does not),
   * in the order the machines were put, then the offers a test added, as given. `bid` prices every
   * offer at its minimum bid and leaves out those without one. `dph_total` equals `dph_base` for
   * machines: Vast adds the allocated storage and its fees, which the notes do not give.
   */
  offers(pricing: 'on-demand' | 'bid'): Record<string, unknown>[] {
    const own = [...this.machines.values()].filter((m) => m.fields.listed === true && isNum(m.fields.listed_gpu_cost)).map((m) => this.offerOf(m))
    const all = [...own, ...[...this.marketOffers.values()].map((o): Record<string, unknown> => ({ ...o }))]
    if (pricing === 'on-demand') return all
    return all.filter((o) => isNum(o.min_bid)).map((o) => ({ ...o, dph_base: o.min_bid, dph_total: o.min_bid }))
  }

  private offerOf(m: StoredMachine): Record<string, unknown> {
    const machine = this.json(m)
    const out: Record<string, unknown> = { id: m.askId, ask_contract_id: m.askId, machine_id: m.id, host_id: m.ownerId }
    for (const [name, field] of Object.entries(OFFER_COPIES)) if (machine[field] !== undefined && machine[field] !== null) out[name] = machine[field]
    const gpus = isNum(m.fields.num_gpus) ? m.fields.num_gpus : 1
    out.dph_base = out.dph_total = (m.fields.listed_gpu_cost as number) * gpus
    if (isNum(m.fields.min_bid_price)) out.min_bid = m.fields.min_bid_price * gpus
    // Rentable unless offline or every GPU is held by an on-demand or reserved client (interruptible ones can be outbid).
    const tokens = String(machine.gpu_occupancy ?? '')
      .split(/\s+/)
      .filter(Boolean)
    out.rentable = (m.fields.timeout ?? 0) === 0 && !(tokens.length > 0 && tokens.every((t) => t === 'D' || t === 'R'))
    return out
  }

  /** The machine as Vast prints it: `id` and `machine_id`, then only the fields that are set. */
  json(m: StoredMachine): Record<string, unknown> {
    const out: Record<string, unknown> = { id: m.id, machine_id: m.id, ...m.fields }
    // Once a test set a machine's reports, the list counts them (num_reports), unless the test set the field itself.
    const reports = this.reports.get(m.id)
    if (reports && m.fields.num_reports === undefined) out.num_reports = reports.length
    if (!m.derive) return out
    const rentals = this.rentalsOf(m.id)
    const onDemand = rentals.filter((r) => r.kind !== 'interruptible')
    out.current_rentals_running = rentals.filter((r) => r.running).length
    out.current_rentals_running_on_demand = onDemand.filter((r) => r.running).length
    out.current_rentals_on_demand = onDemand.length
    out.current_rentals_resident = rentals.length
    const tokens = rentals.filter((r) => r.running).flatMap((r) => Array<string>(r.gpus).fill(TOKEN[r.kind]))
    const gpus = m.fields.num_gpus ?? tokens.length
    while (tokens.length < gpus) tokens.push('x')
    out.gpu_occupancy = tokens.map((t) => `${t} `).join('')
    const ends = rentals.flatMap((r) => (r.end_date === undefined ? [] : [r.end_date]))
    out.client_end_date = ends.length ? Math.max(...ends) : null
    return out
  }
}
