import type { EarningRow, Invoice, MachineFields, MaintenanceWindow, Report, SimKey, SimOwner, SimRental } from './marketplace-a.types'

interface StoredMachine {
  id: number
  ownerId: number
  fields: MachineFields
  /** Set once a rental was attached: the rental counters, occupancy and client_end_date are derived from then on. */
  derive: boolean
}

const TOKEN = { on_demand: 'D', interruptible: 'I', reserved: 'R' } as const

/** The simulator's world: owners and their keys, machines, rentals, reports, earnings and invoices. */
export class SimState {
  readonly owners = new Map<number, SimOwner>()
  private readonly keys = new Map<string, { owner: SimOwner; key: SimKey }>()
  readonly machines = new Map<number, StoredMachine>()
  readonly rentals = new Map<number, SimRental & { machineId: number }>()
  readonly reports = new Map<number, Report[]>()
  readonly earnings = new Map<number, EarningRow[]>()
  readonly invoices = new Map<number, Invoice[]>()
  private nextId = 1

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
    const derive = this.machines.get(id)?.derive ?? false
    this.machines.set(id, { id, ownerId: owner.id, fields: { ...fields }, derive })
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

  rentalsOf(machineId: number): (SimRental & { machineId: number })[] {
    return [...this.rentals.values()].filter((r) => r.machineId === machineId)
  }

  newWindowId(): number {
    return this.nextId++
  }

  windowsOf(m: StoredMachine): MaintenanceWindow[] {
    return Array.isArray(m.fields.machine_maintenance) ? m.fields.machine_maintenance : []
  }

  /** The machine as Vast prints it: `id` and `machine_id`, then only the fields that are set. */
  json(m: StoredMachine): Record<string, unknown> {
    const out: Record<string, unknown> = { id: m.id, machine_id: m.id, ...m.fields }
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
