import { inTransaction, isDatabaseBusy, withTransaction, type Tx } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { TenantWalk } from '../../platform/jobs'
import { noteLateSamples, seriesCache, storeSamples, type SeriesKey, type TelemetrySample } from '../telemetry'
import { recordServerEvent, recordServerEvents } from './events'
import {
  markSnapshotDirty,
  presenceOf,
  setHostFacts,
  setPresence,
  silentServers,
  updateServer,
  upsertLatestMetrics,
  type HostFactsRow,
  type PresenceRow,
} from './fleet.repository'

/**
 * Presence from the agent session's heartbeats only (docs/fleet.md "Presence"): online while
 * heartbeats arrive, suspect after 60 s without one, offline after 300 s, offline at once when the
 * session closes. Every transition is a durable server event and makes the fleet snapshot stale.
 *
 * Heartbeats and telemetry of servers already online are group-committed: kept in memory and
 * written in one transaction at most a second later, so ten thousand agents are a light load.
 * What moves presence or what a reader sees of a session (its close, its hello, the heartbeat that
 * brings a server online) is group-committed too, on a shorter wait (PRESENCE_FLUSH_MS): kept in
 * order with the time it happened, and written before anything of this process reads fleet state
 * (settle(): every HTTP request calls it first, src/server.ts), so a client never sees it late.
 */
const SUSPECT_AFTER_US = 60_000_000
const OFFLINE_AFTER_US = 300_000_000
const FLUSH_EVERY_MS = 1000
const PRESENCE_FLUSH_MS = 100
/**
 * Presence steps per transaction of a flush; the flush yields between two. A mass close (10,000
 * sessions at once) is written in slices of this many, each well under 30 ms, so the event loop
 * (other sessions' frames, the timers) is not held for the whole of it.
 */
const STEPS_PER_WRITE = 128
/** Servers per transaction of presence.sweep; the sweep yields between two. */
const SWEEP_SLICE = 500

/**
 * A session's step waiting for the next presence write, in the order it happened: the heartbeat
 * that may bring the server online, the session's close (offline at once), its hello's host facts.
 * `at` is when it happened (event times and last_seen_at), `eventId` the id its event gets.
 */
type Step =
  | { kind: 'beat'; serverId: string; at: number; eventId: string }
  | { kind: 'closed'; serverId: string; at: number; eventId: string; reason: string }
  | { kind: 'hello'; serverId: string; tenantId: string; facts: HostFactsRow }

export type Sample = TelemetrySample

class FleetRuntime {
  readonly #heartbeats = new Map<string, number>()
  readonly #samples = new Map<string, Sample[]>()
  /** Presence steps not written yet, oldest first. */
  #steps: Step[] = []
  /** Servers this process's sweep moved out of online: their next heartbeat is a presence step. */
  readonly #demoted = new Set<string>()
  #timer: ReturnType<typeof setTimeout> | null = null
  #presenceTimer: ReturnType<typeof setTimeout> | null = null
  /**
   * The flush under way (and those queued behind it), or null. Flushes run one at a time, in the
   * order they were asked for: each takes what waits when its turn comes, so steps are written in
   * the order they happened, and what a failed flush puts back goes before anything taken later.
   */
  #flushing: Promise<void> | null = null
  /** The flush queued behind the one under way that has not started yet, or null. */
  #queued: Promise<string[]> | null = null

  constructor(private readonly deps: Deps) {}

  /**
   * Records a heartbeat. The first one of a session (`knownOnline` false) or the first after the
   * sweep demoted the server is a presence step: it brings the server online with the next
   * presence write.
   */
  heartbeat(serverId: string, knownOnline: boolean): void {
    const at = this.deps.clock.nowUs()
    if (!knownOnline || this.#demoted.delete(serverId)) {
      this.#heartbeats.delete(serverId)
      this.#step({ kind: 'beat', serverId, at, eventId: this.deps.newId() })
      return
    }
    this.#heartbeats.set(serverId, at)
    this.#schedule()
  }

  /** A session said hello: its host facts are written with the next presence write. */
  hello(serverId: string, tenantId: string, facts: HostFactsRow): void {
    this.#step({ kind: 'hello', serverId, tenantId, facts })
  }

  #step(step: Step): void {
    this.#steps.push(step)
    this.#schedulePresence()
  }

  #schedulePresence(): void {
    if (this.#presenceTimer) return
    this.#presenceTimer = setTimeout(async () => {
      this.#presenceTimer = null
      try {
        await this.settle()
      } catch (e) {
        this.deps.log.error('presence flush failed', { error: e })
      }
    }, PRESENCE_FLUSH_MS)
  }

  /**
   * Writes the presence steps waiting, and with them whatever else waits (heartbeats, and the
   * telemetry a closed session sent before its close), in one transaction. Called before anything
   * of this process reads fleet state, so a read never sees a session's step late. A flush under
   * way may hold steps taken before this call (not committed yet): it is waited for too.
   */
  async settle(): Promise<void> {
    if (this.#steps.length > 0 || this.#flushing !== null) await this.flush()
  }

  telemetry(serverId: string, samples: Sample[]): void {
    const list = this.#samples.get(serverId)
    if (list) list.push(...samples)
    else this.#samples.set(serverId, samples)
    this.#schedule()
  }

  #schedule(): void {
    if (this.#timer) return
    this.#timer = setTimeout(async () => {
      this.#timer = null
      try {
        await this.flush()
      } catch (e) {
        this.deps.log.error('fleet flush failed', { error: e })
      }
    }, FLUSH_EVERY_MS)
  }

  /**
   * Writes buffered heartbeats and telemetry in one transaction; returns servers that came online.
   * Waits for the flush under way first (see #flushing). Never call it inside a transaction: the
   * flush under way may be waiting for that transaction's turn.
   */
  flush(): Promise<string[]> {
    // Inside a caller's transaction the flush would be a savepoint of it: the steps taken from the
    // buffer would be written, or lost, with the caller's work. Refused, so such a call shows at once.
    if (inTransaction(this.deps.db))
      return Promise.reject(new Error('the fleet runtime is flushed outside any transaction (a flush inside one would commit or roll back with it)'))
    // A flush queued behind the one under way has not taken anything yet: a caller joins it (it
    // takes what waits when its turn comes), so many requests arriving during a long flush (a mass
    // reconnect's upgrades) make one flush after it, not one each.
    if (this.#queued !== null) return this.#queued
    const before = this.#flushing
    let run: Promise<string[]>
    if (before === null) run = this.#flushNow()
    else {
      const queued = before.then(() => {
        if (this.#queued === queued) this.#queued = null
        return this.#flushNow()
      })
      this.#queued = run = queued
    }
    const done: Promise<void> = run.then(
      () => {},
      () => {},
    )
    this.#flushing = done
    void done.then(() => {
      if (this.#flushing === done) this.#flushing = null
    })
    return run
  }

  async #flushNow(): Promise<string[]> {
    // What waits is taken before the first await: whatever arrives meanwhile is the next flush's.
    if (this.#heartbeats.size === 0 && this.#samples.size === 0 && this.#steps.length === 0) return []
    const beats = [...this.#heartbeats]
    const samples = [...this.#samples]
    const steps = this.#steps
    this.#heartbeats.clear()
    this.#samples.clear()
    this.#steps = []
    const { deps } = this
    const cameOnline: string[] = []
    const cache = seriesCache(deps)
    const fresh = new Map<SeriesKey, number>()
    // The steps in slices of STEPS_PER_WRITE, each its own transaction, in order, the event loop
    // free between two; the heartbeats and telemetry with the last slice (after every step, as in
    // one write).
    const kept: { steps: Step[]; beats: [string, number][] } = { steps: [], beats: [] }
    let from = 0
    try {
      do {
        const slice = steps.slice(from, from + STEPS_PER_WRITE)
        const last = from + STEPS_PER_WRITE >= steps.length
        const online: string[] = []
        if (from > 0) await new Promise<void>((resolve) => setImmediate(resolve))
        const k = await this.#write(slice, last ? beats : [], last ? samples : [], cache, fresh, online)
        kept.steps.push(...k.steps)
        kept.beats.push(...k.beats)
        cameOnline.push(...online)
        from += STEPS_PER_WRITE
      } while (from < steps.length)
    } catch (e) {
      // Nothing of this slice was written (a busy database, say): it goes back for the next flush
      // with what follows it, after what earlier slices kept.
      this.#steps = [...kept.steps, ...steps.slice(from), ...this.#steps]
      if (this.#steps.length) this.#schedulePresence()
      for (const [id, at] of [...kept.beats, ...beats]) if (!((this.#heartbeats.get(id) ?? 0) > at)) this.#heartbeats.set(id, at)
      for (const [id, list] of samples) this.#samples.set(id, [...list, ...(this.#samples.get(id) ?? [])])
      this.#schedule()
      throw e
    }
    for (const [k, v] of fresh) cache.ids.set(k, v)
    // A tenant whose part failed keeps its steps for a later flush (after its backoff), before
    // anything of it that arrived meanwhile; the others' were written.
    if (kept.steps.length) this.#steps = [...kept.steps, ...this.#steps]
    for (const [id, at] of kept.beats) if (!((this.#heartbeats.get(id) ?? 0) > at)) this.#heartbeats.set(id, at)
    return cameOnline
  }

  /** Tenants whose part of a flush failed, waiting out a backoff (TenantWalk), across flushes. */
  readonly #backoff = new Map<string, { failures: number; retryAtUs: number }>()

  async #write(
    steps: Step[],
    beats: [string, number][],
    samples: [string, Sample[]][],
    cache: ReturnType<typeof seriesCache>,
    fresh: Map<SeriesKey, number>,
    cameOnline: string[],
  ): Promise<{ steps: Step[]; beats: [string, number][] }> {
    const { deps } = this
    const rest = async (tx: Tx) => {
      // The latest value per series is written once per flush, from the sample with the latest time.
      const { earliest, latest } = await storeSamples(deps, cache, fresh, samples)
      await upsertLatestMetrics(tx, latest)
      if (earliest !== Number.POSITIVE_INFINITY) await noteLateSamples(tx, earliest, deps.clock.nowUs())
    }
    // Optimistic first, while no tenant is waiting out a backoff: everything in one plain transaction.
    const now = deps.clock.nowUs()
    if (![...this.#backoff.values()].some((b) => b.retryAtUs > now))
      try {
        await withTransaction(deps.db, async (tx) => {
          // On PostgreSQL a transaction that lost a serialization conflict runs again from the start
          // (db/pg/pool.ts): what an attempt that rolled back collected is dropped first.
          cameOnline.length = 0
          fresh.clear()
          await this.#writeSteps(tx, steps, beats, cameOnline)
          await rest(tx)
        })
        return { steps: [], beats: [] }
      } catch (e) {
        if (isDatabaseBusy(e)) throw e
      }
    // Carefully: each tenant's steps (and what reacts to them: events, notifications, incidents) in
    // its own savepoint and its own part of the per-tenant boundary, so one tenant whose transition
    // throws (bad data) keeps its steps, is reported and waits out a backoff; the others' are written.
    const walk = new TenantWalk(deps, 'presence.flush', this.#backoff)
    const kept: { steps: Step[]; beats: [string, number][] } = { steps: [], beats: [] }
    await withTransaction(deps.db, async (tx) => {
      cameOnline.length = 0
      fresh.clear()
      kept.steps = []
      kept.beats = []
      const ids = new Set<string>()
      for (const st of steps) ids.add(st.serverId)
      for (const [id] of beats) ids.add(id)
      const tenantOf = new Map((await presenceOf(tx, [...ids])).map((r) => [r.id, r.tenantId]))
      const parts = new Map<string, { steps: Step[]; beats: [string, number][] }>()
      const partOf = (tenantId: string) => {
        let part = parts.get(tenantId)
        if (!part) parts.set(tenantId, (part = { steps: [], beats: [] }))
        return part
      }
      for (const st of steps) {
        const tenantId = st.kind === 'hello' ? st.tenantId : tenantOf.get(st.serverId)
        if (tenantId !== undefined) partOf(tenantId).steps.push(st)
      }
      for (const beat of beats) {
        const tenantId = tenantOf.get(beat[0])
        if (tenantId !== undefined) partOf(tenantId).beats.push(beat)
      }
      for (const [tenantId, part] of parts) {
        const online: string[] = []
        const done = await walk.run(tenantId, () =>
          withTransaction(tx, async (one) => {
            online.length = 0
            await this.#writeSteps(one, part.steps, part.beats, online)
            return true
          }),
        )
        if (done) cameOnline.push(...online)
        else {
          kept.steps.push(...part.steps)
          kept.beats.push(...part.beats)
        }
      }
      await rest(tx)
    })
    return kept
  }

  /**
   * Writes presence steps in the order they happened, then heartbeats of servers online (the
   * latest of each; one finding its server not online brings it online, as a step would).
   */
  async #writeSteps(tx: Tx, steps: Step[], beats: [string, number][], cameOnline: string[]): Promise<void> {
    const { deps } = this
    if (steps.length === 0 && beats.length === 0) return
    const ids = new Set<string>()
    for (const st of steps) ids.add(st.serverId)
    for (const [id] of beats) ids.add(id)
    // Decommissioned servers included: a close still takes one offline (decommissioning does too).
    const rows = new Map((await presenceOf(tx, [...ids])).map((r) => [r.id, r]))
    // Each tenant's snapshot is marked out of date once per flush, however many of its servers moved.
    const dirty = new Set<string>()
    const markDirty = async (tenantId: string) => {
      if (dirty.has(tenantId)) return
      dirty.add(tenantId)
      await markSnapshotDirty(tx, tenantId)
    }
    // The transitions' events and their reactions are written per batch (recordServerEvents): one
    // batch holds each server at most once, so a server's second transition in this flush starts
    // the next batch, after the first's reactions (they see its events in the order they happened).
    let batch: Parameters<typeof recordServerEvents>[2] = []
    const inBatch = new Set<string>()
    const transition = async (row: PresenceRow, event: Parameters<typeof recordServerEvents>[2][number]['event']) => {
      if (inBatch.has(row.id)) await writeBatch()
      inBatch.add(row.id)
      batch.push({ server: row, event })
      await markDirty(row.tenantId)
    }
    const writeBatch = async () => {
      const list = batch
      batch = []
      inBatch.clear()
      await recordServerEvents(tx, deps, list)
    }
    const online = async (row: PresenceRow, at: number, eventId?: string) => {
      await setPresence(tx, row.id, 'online', at)
      await transition(row, { kind: 'presence.online', message: `online (was ${row.presence})`, data: { from: row.presence }, at, id: eventId })
      cameOnline.push(row.id)
      row.presence = 'online'
    }
    for (const st of steps) {
      const row = rows.get(st.serverId)
      if (st.kind === 'hello') {
        await setHostFacts(tx, st.serverId, st.facts)
        await markDirty(st.tenantId)
        continue
      }
      if (!row) continue
      if (st.kind === 'beat') {
        if (row.decommissioned) continue
        if (row.presence === 'online') await setPresence(tx, row.id, null, st.at)
        else await online(row, st.at, st.eventId)
        continue
      }
      if (row.presence === 'offline') continue
      await setPresence(tx, row.id, 'offline', null)
      await transition(row, {
        kind: 'presence.offline',
        severity: 'warning',
        message: `offline: ${st.reason}`,
        data: { from: row.presence, reason: st.reason },
        at: st.at,
        id: st.eventId,
      })
      row.presence = 'offline'
    }
    for (const [id, at] of beats) {
      const row = rows.get(id)
      if (!row || row.decommissioned) continue
      if (row.presence === 'online') await setPresence(tx, id, null, at)
      else await online(row, at)
    }
    await writeBatch()
  }

  /**
   * The live session ended: offline at once, as every reader sees it (the step is written before
   * any read of this process, and within PRESENCE_FLUSH_MS otherwise), after what it sent.
   */
  sessionClosed(serverId: string, reason: string): void {
    // The session's last heartbeat happened before its close: it goes first.
    const last = this.#heartbeats.get(serverId)
    if (last !== undefined) {
      this.#heartbeats.delete(serverId)
      this.#steps.push({ kind: 'beat', serverId, at: last, eventId: this.deps.newId() })
    }
    this.#step({ kind: 'closed', serverId, at: this.deps.clock.nowUs(), eventId: this.deps.newId(), reason })
  }

  /**
   * The presence.sweep job: online → suspect after 60 s, → offline after 300 s without a heartbeat.
   * What waits in memory is written first; then SWEEP_SLICE servers per transaction, yielding
   * between two, so a mass silence never holds the write lock for long. Each server's transition
   * (and what reacts to it: notifications, alerts, the live stream) is its own part of the job's
   * per-tenant error boundary, scoped by server: a slice that fails is done again with each server
   * in its own savepoint, so one whose transition throws is rolled back alone, keeps its presence,
   * is reported and waits out a backoff; the others move.
   */
  async sweep(tenants: TenantWalk = new TenantWalk(this.deps, 'presence.sweep')): Promise<string> {
    await this.flush()
    const { deps } = this
    const now = deps.clock.nowUs()
    let suspect = 0
    let offline = 0
    // Servers this run could not move (failed, or waiting out a backoff): the next slices pass them by.
    const passed = new Set<string>()
    /** One slice in the caller's transaction: what it chose, and the servers it moved. */
    const slice = async (tx: Tx, careful: boolean) => {
      const stale = (await silentServers(tx, now - SUSPECT_AFTER_US, now - OFFLINE_AFTER_US, SWEEP_SLICE + passed.size))
        .filter((s) => !passed.has(s.id))
        .slice(0, SWEEP_SLICE)
      const moved: { id: string; to: 'offline' | 'suspect' }[] = []
      const skipped: string[] = []
      let deferred = 0
      for (const s of stale) {
        const to = s.lastSeenAt! < now - OFFLINE_AFTER_US ? 'offline' : 'suspect'
        const scope = `server ${s.id}`
        const move = async (one: Tx) => {
          await updateServer(one, s.id, { presence: to })
          const silentS = Math.floor((now - s.lastSeenAt!) / 1_000_000)
          await recordServerEvent(one, deps, s, {
            kind: `presence.${to}`,
            severity: 'warning',
            message: `${to}: no heartbeat for ${silentS} s`,
            data: { from: s.presence, silent_seconds: silentS },
          })
          await markSnapshotDirty(one, s.tenantId)
          return true
        }
        let ok: boolean | undefined
        if (tenants.isWaiting(s.tenantId, scope)) {
          deferred++
          ok = undefined
        } else if (!careful) ok = await move(tx)
        else ok = await tenants.run(s.tenantId, () => withTransaction(tx, move), scope)
        if (ok) moved.push({ id: s.id, to })
        else skipped.push(s.id)
      }
      return { chosen: stale.length, moved, skipped, deferred }
    }
    for (;;) {
      // Optimistic first: the slice as one plain transaction. A slice in which some server's
      // transition throws is rolled back whole and done again carefully, each server in its own
      // savepoint and the per-tenant boundary.
      let done: Awaited<ReturnType<typeof slice>>
      try {
        done = await withTransaction(deps.db, (tx) => slice(tx, false))
      } catch (e) {
        if (isDatabaseBusy(e)) throw e
        done = await withTransaction(deps.db, (tx) => slice(tx, true))
      }
      tenants.deferred += done.deferred
      for (const id of done.skipped) passed.add(id)
      for (const m of done.moved) {
        this.#demoted.add(m.id)
        if (m.to === 'offline') offline++
        else suspect++
      }
      const n = done.chosen
      if (n < SWEEP_SLICE) break
      await new Promise<void>((resolve) => setImmediate(resolve))
      // Heartbeats that came in meanwhile are written before the next slice is chosen.
      await this.flush()
    }
    return `${suspect} servers became suspect, ${offline} offline`
  }

  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer)
    if (this.#presenceTimer) clearTimeout(this.#presenceTimer)
    this.#timer = null
    this.#presenceTimer = null
    await this.flush()
  }
}

/** The fleet runtime of this process (one per Deps). */
export const fleetRuntime = perDeps((deps) => new FleetRuntime(deps))
