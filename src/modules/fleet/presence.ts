import { withTransaction } from '../../../db/client'
import { perDeps, type Deps } from '../../platform/context'
import { noteLateSamples, seriesCache, storeSamples, type SeriesKey, type TelemetrySample } from '../telemetry'
import { recordServerEvent } from './events'
import { markFleetDirty, presenceOf, presenceOfServer, silentServers, updateServer, upsertLatestMetric } from './fleet.repository'

/**
 * Presence from the agent session's heartbeats only (docs/fleet.md "Presence"): online while
 * heartbeats arrive, suspect after 60 s without one, offline after 300 s, offline at once when the
 * session closes. Every transition is a durable server event and makes the fleet snapshot stale.
 *
 * Heartbeats and telemetry of servers already online are group-committed: kept in memory and
 * written in one transaction at most a second later, so ten thousand agents are a light load. A
 * heartbeat that changes presence is written at once.
 */
const SUSPECT_AFTER_US = 60_000_000
const OFFLINE_AFTER_US = 300_000_000
const FLUSH_EVERY_MS = 1000

export type Sample = TelemetrySample

class FleetRuntime {
  readonly #heartbeats = new Map<string, number>()
  readonly #samples = new Map<string, Sample[]>()
  /** Servers this process's sweep moved out of online: their next heartbeat is written at once. */
  readonly #demoted = new Set<string>()
  #timer: ReturnType<typeof setTimeout> | null = null

  constructor(private readonly deps: Deps) {}

  /** Records a heartbeat; returns true when it brought the server online (written at once). */
  heartbeat(serverId: string, knownOnline: boolean): boolean {
    this.#heartbeats.set(serverId, this.deps.clock.nowUs())
    if (!knownOnline || this.#demoted.delete(serverId)) return this.flush().includes(serverId)
    this.#schedule()
    return false
  }

  telemetry(serverId: string, samples: Sample[]): void {
    const list = this.#samples.get(serverId)
    if (list) list.push(...samples)
    else this.#samples.set(serverId, samples)
    this.#schedule()
  }

  #schedule(): void {
    if (this.#timer) return
    this.#timer = setTimeout(() => {
      this.#timer = null
      try {
        this.flush()
      } catch (e) {
        this.deps.log.error('fleet flush failed', { error: e })
      }
    }, FLUSH_EVERY_MS)
  }

  /** Writes buffered heartbeats and telemetry in one transaction; returns servers that came online. */
  flush(): string[] {
    if (this.#heartbeats.size === 0 && this.#samples.size === 0) return []
    const beats = [...this.#heartbeats]
    const samples = [...this.#samples]
    this.#heartbeats.clear()
    this.#samples.clear()
    const { deps } = this
    const cameOnline: string[] = []
    const cache = seriesCache(deps)
    const fresh = new Map<SeriesKey, number>()
    try {
      this.#write(beats, samples, cache, fresh, cameOnline)
    } catch (e) {
      // Nothing was written (a busy database, say): what was taken goes back for the next flush.
      for (const [id, at] of beats) if (!((this.#heartbeats.get(id) ?? 0) > at)) this.#heartbeats.set(id, at)
      for (const [id, list] of samples) this.#samples.set(id, [...list, ...(this.#samples.get(id) ?? [])])
      this.#schedule()
      throw e
    }
    for (const [k, v] of fresh) cache.ids.set(k, v)
    return cameOnline
  }

  #write(
    beats: [string, number][],
    samples: [string, Sample[]][],
    cache: ReturnType<typeof seriesCache>,
    fresh: Map<SeriesKey, number>,
    cameOnline: string[],
  ): void {
    const { deps } = this
    withTransaction(deps.db, (tx) => {
      if (beats.length) {
        const ids = beats.map(([id]) => id)
        const byId = new Map(presenceOf(tx, ids).map((r) => [r.id, r]))
        for (const [id, at] of beats) {
          const row = byId.get(id)
          if (!row) continue
          if (row.presence === 'online') {
            updateServer(tx, id, { lastSeenAt: at })
            continue
          }
          updateServer(tx, id, { lastSeenAt: at, presence: 'online' })
          recordServerEvent(tx, deps, row, { kind: 'presence.online', message: `online (was ${row.presence})`, data: { from: row.presence } })
          markFleetDirty(tx, row.tenantId)
          cameOnline.push(id)
        }
      }
      // The latest value per series is written once per flush, from the sample with the latest time.
      const { earliest, latest } = storeSamples(deps, cache, fresh, samples)
      for (const row of latest) upsertLatestMetric(deps.sqlite, row)
      if (earliest !== Number.POSITIVE_INFINITY) noteLateSamples(tx, earliest, deps.clock.nowUs())
    })
  }

  /** The live session ended: offline at once (after writing what it sent). */
  sessionClosed(serverId: string, reason: string): void {
    this.flush()
    const { deps } = this
    withTransaction(deps.db, (tx) => {
      const row = presenceOfServer(tx, serverId)
      if (!row || row.presence === 'offline') return
      updateServer(tx, serverId, { presence: 'offline' })
      recordServerEvent(tx, deps, row, { kind: 'presence.offline', severity: 'warning', message: `offline: ${reason}`, data: { from: row.presence, reason } })
      markFleetDirty(tx, row.tenantId)
    })
  }

  /** The presence.sweep job: online → suspect after 60 s, → offline after 300 s without a heartbeat. */
  sweep(): string {
    this.flush()
    const { deps } = this
    const now = deps.clock.nowUs()
    let suspect = 0
    let offline = 0
    withTransaction(deps.db, (tx) => {
      const stale = silentServers(tx, now - SUSPECT_AFTER_US, now - OFFLINE_AFTER_US)
      for (const s of stale) {
        const to = s.lastSeenAt! < now - OFFLINE_AFTER_US ? 'offline' : 'suspect'
        updateServer(tx, s.id, { presence: to })
        const silentS = Math.floor((now - s.lastSeenAt!) / 1_000_000)
        recordServerEvent(tx, deps, s, {
          kind: `presence.${to}`,
          severity: 'warning',
          message: `${to}: no heartbeat for ${silentS} s`,
          data: { from: s.presence, silent_seconds: silentS },
        })
        markFleetDirty(tx, s.tenantId)
        this.#demoted.add(s.id)
        if (to === 'offline') offline++
        else suspect++
      }
    })
    return `${suspect} servers became suspect, ${offline} offline`
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
    this.flush()
  }
}

/** The fleet runtime of this process (one per Deps). */
export const fleetRuntime = perDeps((deps) => new FleetRuntime(deps))
