import { expect } from 'bun:test'
import { sql } from 'drizzle-orm'
import type { TestApp } from '../support/app'
import { GOOD_PASSWORD, sessionFrom, signIn, withSession } from '../support/accounts'
import { api, enrolAgent, newOwner, ok, RawAgent, type Owner } from '../support/fleet'

/**
 * Helpers for the telemetry tests. Samples travel the real path: an enrolled agent's WebSocket
 * session, the fleet runtime's group commit, SQLite; the rollups come from the real job run over
 * HTTP, and every read is GET /servers/{id}/metrics.
 */

export const US = 1_000_000
export const MIN = 60 * US
export const HOUR = 3600 * US
export const DAY = 24 * HOUR

/** A fixed, hour-aligned instant in the future of the real clock: every file lays its samples out from here. */
export const BASE = Date.UTC(2031, 4, 14, 10, 0, 0) * 1000

/** RFC 3339 with six fraction digits, as the service writes it. */
export function iso(us: number): string {
  const ms = Math.floor(us / 1000)
  return `${new Date(ms).toISOString().slice(0, 23)}${String(us - ms * 1000).padStart(3, '0')}Z`
}

/** Microseconds of a timestamp the service wrote (always UTC with six fraction digits). */
export function parseIso(text: string): number {
  expect(text).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/)
  return Date.parse(`${text.slice(0, 23)}Z`) * 1000 + Number(text.slice(23, 26))
}

/** Moves the service clock to `us` (forward only). */
export async function setNow(app: TestApp, us: number): Promise<void> {
  await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { now: iso(us) } }))
}

export async function advance(app: TestApp, seconds: number): Promise<void> {
  await ok(app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } }))
}

export async function runJob(app: TestApp, job: string): Promise<{ outcome: string; detail: string }> {
  const r = await ok<{ outcome: string; detail: string }>(app.fetch(`/api/v1/_test/jobs/${job}/run`, { method: 'POST' }))
  expect(r.outcome).toBe('succeeded')
  return r
}

/** A fresh session for the owner, for tests that move the clock past a session's lifetime. */
export async function signInAgain(app: TestApp, owner: Owner): Promise<Owner> {
  const res = await signIn(app, owner.email, GOOD_PASSWORD)
  expect(res.status).toBe(201)
  const session = sessionFrom(res)!
  return { ...owner, session, headers: withSession(session) }
}

export type Rig = { owner: Owner; serverId: string; agent: RawAgent }

const openAgents = new Set<RawAgent>()

/** Closes every agent session a test opened, so the app can stop (it waits for open sockets). */
async function closeAgents(): Promise<void> {
  await Promise.all([...openAgents].map((a) => a.close()))
  openAgents.clear()
}

/** Stops the app after closing the sessions the tests left open. */
export async function stopApp(app: TestApp): Promise<void> {
  await closeAgents()
  await app.close()
}

/** A pro-plan owner (room for several servers) unless one is given, and one enrolled agent with a live session. */
export async function newRig(app: TestApp, opts: { owner?: Owner; gpus?: number } = {}): Promise<Rig> {
  const owner = opts.owner ?? (await newOwner(app, 'telemetry', 'pro'))
  const gpus = Array.from({ length: opts.gpus ?? 2 }, (_, i) => ({ index: i, model: 'NVIDIA GeForce RTX 4090' }))
  const enrolled = await enrolAgent(app, owner, { gpus })
  const { agent } = await RawAgent.start(app, enrolled.agent_token, { gpus })
  openAgents.add(agent)
  return { owner, serverId: enrolled.server_id, agent }
}

export type Sample = { t: number; gpu?: number; values: Record<string, number | null> }

/**
 * Sends the samples as telemetry frames (at most 500 per frame) and waits until the service has
 * handled every frame; fails on any error frame. The samples are then in the runtime's buffer, to
 * be written by the next flush (the rollup job flushes first).
 */
export async function feed(agent: RawAgent, samples: Sample[]): Promise<void> {
  const before = agent.errors().length
  for (let i = 0; i < samples.length; i += 500)
    agent.send({
      type: 'telemetry',
      samples: samples
        .slice(i, i + 500)
        .map((s) =>
          s.gpu === undefined ? { t: iso(s.t), scope: 'host', values: s.values } : { t: iso(s.t), scope: 'gpu', gpu_index: s.gpu, values: s.values },
        ),
    })
  await agent.barrier()
  expect(agent.errors().slice(before)).toEqual([])
}

/**
 * One instant of the byte-identity fixtures (metrics-identity, running-hour): two GPUs with decimal
 * noise, nulls and a metric of no unit, and a host metric. `memory` adds memory_used_mb, which
 * metrics-identity's fixture holds and running-hour's does not.
 */
export function noisyFrame(t: number, i: number, { memory = false }: { memory?: boolean } = {}): Sample[] {
  const noisy = (k: number) => 40 + 30 * Math.sin(i / 17 + k) + i / 7 + 0.1 + 0.2
  const out: Sample[] = [0, 1].map((gpu) => ({
    t,
    gpu,
    values: {
      temperature_c: noisy(gpu),
      utilization_pct: i % 13 === 0 ? null : (i * 7 + gpu) % 101,
      ...(memory ? { memory_used_mb: 1000 + ((i * 37) % 500) + 0.3 } : {}),
      tokens_per_second: i % 29 === 0 ? null : 1 / (i + 3 + gpu),
    },
  }))
  out.push({ t, values: { net_rx_mbps: (i % 9) * 0.125 + 0.004 } })
  return out
}

/** A metrics answer as the fixtures hold it: the server id and the running clock's instants taken out. */
export function comparableAnswer(text: string, serverId: string): string {
  return text.replaceAll(serverId, 'SERVER').replace(/^\{"generated_at":"[^"]*","data_as_of":"[^"]*",/, '{')
}

/** Runs metrics.rollup (which first writes what the agents sent). */
export const rollup = (app: TestApp) => runJob(app, 'metrics.rollup')

export type Point = { t: string; min: number | null; max: number | null; avg: number | null; p50: number | null; p95: number | null; last: number | null }
export type Series = { metric: string; scope: 'host' | 'gpu'; gpu_index: number | null; unit: string | null; points: Point[] }
export type Snapshot = {
  generated_at: string
  data_as_of: string
  version: number
  stale: boolean
  stale_reason: string | null
  server_id: string
  resolution: '5m' | '1h'
  from: string
  to: string
  series: Series[]
}

/** GET /servers/{id}/metrics with query pairs (repeat a key for an array). */
export function getMetrics(
  app: TestApp,
  owner: Owner,
  serverId: string,
  query: [string, string | number][] = [],
  headers: Record<string, string> = {},
): Promise<Response> {
  const qs = new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)])).toString()
  return api(app, owner, 'GET', `/servers/${serverId}/metrics${qs ? `?${qs}` : ''}`, { headers })
}

export async function metrics(app: TestApp, owner: Owner, serverId: string, query: [string, string | number][] = []): Promise<Snapshot> {
  return ok<Snapshot>(getMetrics(app, owner, serverId, query))
}

export function seriesOf(s: Snapshot, metric: string, gpuIndex: number | null): Series {
  const found = s.series.find((x) => x.metric === metric && x.gpu_index === gpuIndex)
  if (!found) throw new Error(`no series ${metric}/${gpuIndex} in ${JSON.stringify(s.series.map((x) => [x.metric, x.gpu_index]))}`)
  return found
}

export function pointAt(series: Series, us: number): Point {
  const p = series.points.find((x) => x.t === iso(us))
  if (!p) throw new Error(`no point at ${iso(us)} in ${series.metric}`)
  return p
}

/** percentile_cont with linear interpolation between the two closest ranks, computed independently. */
export function percentileCont(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  const pos = p * (sorted.length - 1)
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo)
}

/** Every rollup row, in a stable order: the job's idempotence is judged on this. */
export async function dumpRollups(app: TestApp): Promise<unknown[]> {
  return await app.deps.db.all(
    sql`SELECT series_id, grain, bucket, min, max, avg, p50, p95, last, samples FROM metric_rollups ORDER BY series_id, grain, bucket`,
  )
}

export async function rollupRow(app: TestApp, serverId: string, metric: string, gpuIndex: number, grain: 300 | 3600, bucket: number) {
  return (
    ((await app.deps.db.get(sql`SELECT r.min, r.max, r.avg, r.p50, r.p95, r.last, r.samples FROM metric_rollups r JOIN metric_series s ON s.id = r.series_id
       WHERE s.server_id = ${serverId} AND s.metric = ${metric} AND s.gpu_index = ${gpuIndex} AND r.grain = ${grain} AND r.bucket = ${bucket}`)) as
      | {
          min: number | null
          max: number | null
          avg: number | null
          p50: number | null
          p95: number | null
          last: number | null
          samples: number
        }
      | undefined) ?? null
  )
}

export async function rawCount(app: TestApp, serverId: string): Promise<number> {
  return (
    (await app.deps.db.get(sql`SELECT count(*) AS n FROM metric_samples m JOIN metric_series s ON s.id = m.series_id WHERE s.server_id = ${serverId}`)) as {
      n: number
    }
  ).n
}
