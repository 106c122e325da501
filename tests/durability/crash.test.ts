import { afterAll, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { MIGRATIONS_FOLDER } from '../../db/client'
import { freePort, freshDataDir, serviceEnv, spawnService, startService, waitExit, waitReady, type Service } from './service'

/**
 * kill -9 harness (docs/operations.md "Durability"): the real service under concurrent write load
 * is SIGKILLed at a random moment, restarted on the same file, and must have kept every write it
 * acknowledged, exactly once, in a database that passes integrity_check.
 */

const ROUNDS = 3
const WORKERS = 16
const MAX_PER_WORKER = 500
const PROBES = '/api/v1/_test/probes'

type Sent = { value: string; key: string | null }
type Ack = Sent & { id: string }

const services: Service[] = []
const dirs: string[] = []
afterAll(async () => {
  for (const s of services) if (s.proc.exitCode === null && s.proc.signalCode === null) s.proc.kill('SIGKILL')
  await Promise.all(services.map((s) => s.exited))
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function start(dir: string): Promise<Service> {
  const s = await startService(dir)
  services.push(s)
  return s
}

function postProbe(url: string, sent: Sent): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (sent.key) headers['idempotency-key'] = sent.key
  return fetch(url + PROBES, { method: 'POST', headers, body: JSON.stringify({ value: sent.value }), signal: AbortSignal.timeout(5000) })
}

/**
 * WORKERS closed loops of unique POSTs (every other loop with an Idempotency-Key) until the
 * process dies under them or each has sent MAX_PER_WORKER. Returns what was acknowledged with 201
 * and what was sent but never answered.
 */
async function writeUntilKilled(service: Service, round: number) {
  const acked: Ack[] = []
  const unanswered: Sent[] = []
  const other: number[] = []
  const worker = async (w: number) => {
    for (let n = 0; n < MAX_PER_WORKER; n++) {
      const value = `round${round}-worker${w}-${n}`
      const sent: Sent = { value, key: w % 2 === 0 ? `key-${value}` : null }
      let res: Response
      try {
        res = await postProbe(service.url, sent)
      } catch {
        unanswered.push(sent)
        return
      }
      if (res.status !== 201) {
        other.push(res.status)
        await res.body?.cancel()
        continue
      }
      const body = (await res.json()) as { id: string; value: string }
      acked.push({ ...sent, id: body.id })
    }
  }
  const loops = Array.from({ length: WORKERS }, (_, w) => worker(w))
  // Kill only once writes are flowing, then at a random moment up to a second later.
  const deadline = Date.now() + 10_000
  while (acked.length < 30 && Date.now() < deadline) await Bun.sleep(5)
  await Bun.sleep(Math.floor(Math.random() * 1000))
  service.proc.kill('SIGKILL')
  await Promise.all(loops)
  await service.exited
  return { acked, unanswered, other }
}

/** GETs every acknowledged probe over HTTP, 16 at a time; returns the ones that did not come back intact. */
async function unreadable(url: string, acks: Ack[]): Promise<string[]> {
  const bad: string[] = []
  let next = 0
  const reader = async () => {
    while (next < acks.length) {
      const ack = acks[next++]!
      const res = await fetch(`${url}${PROBES}/${ack.id}`, { signal: AbortSignal.timeout(5000) })
      const body = res.status === 200 ? ((await res.json()) as { id: string; value: string }) : null
      if (!body || body.id !== ack.id || body.value !== ack.value) bad.push(`${ack.id} → ${res.status}`)
    }
  }
  await Promise.all(Array.from({ length: 16 }, reader))
  return bad
}

function inspect(path: string) {
  const db = new Database(path, { readonly: true })
  try {
    db.exec('PRAGMA busy_timeout = 5000')
    const integrity = db.query('PRAGMA integrity_check').all() as { integrity_check: string }[]
    const rows = db.query('SELECT id, value FROM test_probes').all() as { id: string; value: string }[]
    const duplicates = db.query('SELECT value, COUNT(*) AS n FROM test_probes GROUP BY value HAVING n > 1').all()
    return { integrity: integrity.map((r) => r.integrity_check), byId: new Map(rows.map((r) => [r.id, r.value])), duplicates }
  } finally {
    db.close()
  }
}

describe('a crash at any moment', () => {
  test('every acknowledged write survives SIGKILL and restarts, exactly once, in an intact database', async () => {
    const dir = freshDataDir()
    dirs.push(dir)
    const path = join(dir, 'gpuhq.db')
    const acks: Ack[] = []
    let service = await start(dir)

    for (let round = 1; round <= ROUNDS; round++) {
      const { acked, unanswered, other } = await writeUntilKilled(service, round)
      expect(acked.length).toBeGreaterThan(0)
      expect(other).toEqual([]) // a healthy service answers every unique POST with 201
      acks.push(...acked)

      service = await start(dir)
      const db = inspect(path)
      expect(db.integrity).toEqual(['ok'])
      expect(acks.filter((a) => db.byId.get(a.id) !== a.value).map((a) => a.value)).toEqual([])
      expect(db.duplicates).toEqual([])
      expect(await unreadable(service.url, acks)).toEqual([])

      // An acknowledged idempotent request retried after the crash replays the very same probe.
      for (const ack of acked.filter((a) => a.key)) {
        const res = await postProbe(service.url, ack)
        expect(res.status).toBe(201)
        expect(res.headers.get('idempotent-replayed')).toBe('true')
        expect(((await res.json()) as { id: string }).id).toBe(ack.id)
      }

      // A request cut off by the kill may be retried within the claim's lock (60 s): it runs once
      // or replays (201), or its claim is still held (409); it never runs a second time.
      let created = 0
      for (const sent of unanswered.filter((s) => s.key)) {
        const res = await postProbe(service.url, sent)
        expect([201, 409]).toContain(res.status)
        if (res.status === 409) {
          await res.body?.cancel()
          continue
        }
        if (res.headers.get('idempotent-replayed') !== 'true') created++
        acks.push({ ...sent, id: ((await res.json()) as { id: string }).id })
      }
      const after = inspect(path)
      expect(after.duplicates).toEqual([])
      expect(after.byId.size).toBe(db.byId.size + created) // replays added no rows

      // Past the lock, a claim whose write never committed is taken over and runs once; one whose
      // write committed but whose answer the kill lost answers 409 instead of running again.
      const clock = await fetch(`${service.url}/api/v1/_test/clock`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"advance_seconds":61}',
      })
      expect(clock.status).toBe(200)
      let late = 0
      for (const sent of unanswered.filter((s) => s.key)) {
        const res = await postProbe(service.url, sent)
        expect([201, 409]).toContain(res.status)
        if (res.status === 201 && res.headers.get('idempotent-replayed') !== 'true') late++
        await res.body?.cancel()
      }
      const final = inspect(path)
      expect(final.duplicates).toEqual([])
      expect(final.byId.size).toBe(after.byId.size + late)
    }

    service.proc.kill('SIGTERM')
    expect(await waitExit(service)).toBe(0)
  }, 55_000)
})

describe('starting up', () => {
  test('two processes started at the same moment on a fresh database both come up ready', async () => {
    const expected = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER }).length
    for (let attempt = 0; attempt < 3; attempt++) {
      const dir = freshDataDir()
      dirs.push(dir)
      const pair = [spawnService(serviceEnv(dir, freePort())), spawnService(serviceEnv(dir, freePort()))]
      services.push(...pair)
      await Promise.all(pair.map((s) => waitReady(s)))

      const db = new Database(join(dir, 'gpuhq.db'), { readonly: true })
      const applied = db.query('SELECT COUNT(*) AS n FROM __drizzle_migrations').get() as { n: number }
      db.close()
      expect(applied.n).toBe(expected)

      // Both serve the one database: a probe written through one is read through the other.
      const res = await postProbe(pair[0]!.url, { value: `pair-${attempt}`, key: null })
      expect(res.status).toBe(201)
      const { id } = (await res.json()) as { id: string }
      expect((await fetch(`${pair[1]!.url}${PROBES}/${id}`)).status).toBe(200)

      for (const s of pair) s.proc.kill('SIGTERM')
      for (const s of pair) {
        expect(await waitExit(s)).toBe(0)
        expect(s.stdout()).not.toContain('"level":"error"')
      }
    }
  }, 30_000)
})
