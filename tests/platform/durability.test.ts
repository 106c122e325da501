import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { withTransaction } from '../../db/client'
import { serviceSettings } from '../../db/schema'
import { buildDeps } from '../../src/deps'
import { loadConfig } from '../../src/config'
import { createLogger } from '../../src/platform/logger'
import { tempDeps, type TempDeps } from './fixtures/temp-deps'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * Group commit (db/durability.ts): commits are not fsynced one by one; `barrier()` fsyncs the WAL
 * once for every commit made before it, and the service awaits it before any answer leaves.
 */
let t: TempDeps
beforeEach(async () => {
  t = await tempDeps()
})
afterEach(() => t.close())

let n = 0
const commit = () =>
  withTransaction(t.deps.db, (tx) =>
    tx
      .insert(serviceSettings)
      .values({ key: `k${++n}`, value: 'v', updatedAt: 1 })
      .run(),
  )

describe('group commit', () => {
  test('a commit waits for the barrier, which makes it durable with one fsync', async () => {
    const before = t.deps.durable.stats().flushes
    await commit()
    expect(t.deps.durable.pending()).toBe(true)
    await t.deps.durable.barrier()
    expect(t.deps.durable.pending()).toBe(false)
    expect(t.deps.durable.stats()).toMatchObject({ flushes: before + 1, pendingChanges: 0 })
  })

  test('a barrier with nothing committed since the last fsync costs nothing', async () => {
    await commit()
    await t.deps.durable.barrier()
    const before = t.deps.durable.stats().flushes
    await Promise.all([t.deps.durable.barrier(), t.deps.durable.barrier()])
    expect(t.deps.durable.stats().flushes).toBe(before)
  })

  test('callers waiting together share one fsync', async () => {
    await commit()
    const before = t.deps.durable.stats().flushes
    await Promise.all(Array.from({ length: 10 }, () => t.deps.durable.barrier()))
    expect(t.deps.durable.stats().flushes).toBe(before + 1)
  })

  test('a commit made while an fsync is under way waits for the next one, which later commits share', async () => {
    await commit()
    const before = t.deps.durable.stats().flushes
    const order: string[] = []
    const first = t.deps.durable.barrier().then(() => order.push('first'))
    await commit() // after the first fsync began: it does not cover this one
    const second = t.deps.durable.barrier().then(() => {
      order.push('second')
      // Resolved only once its own commit is covered.
      expect(t.deps.durable.pending()).toBe(false)
    })
    await commit()
    const third = t.deps.durable.barrier().then(() => order.push('third'))
    await Promise.all([first, second, third])
    expect(order).toEqual(['first', 'second', 'third'])
    expect(t.deps.durable.stats()).toMatchObject({ flushes: before + 2, pendingChanges: 0 })
  })

  test('a tool connection (scripts/admin) fsyncs every commit itself: synchronous=FULL, nothing pending', async () => {
    const config = loadConfig({ NODE_ENV: 'test', DATA_DIR: t.dir, DATABASE_URL: `file:${t.dbPath}`, SECRET_KEY: 'b'.repeat(64) })
    const tool = await buildDeps(config, { log: createLogger('silent', () => ''), groupCommit: false })
    try {
      expect(tool.database.sqlite!.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 })
      await withTransaction(tool.db, (tx) => tx.insert(serviceSettings).values({ key: 'tool', value: 'v', updatedAt: 1 }).run())
      expect(tool.durable.pending()).toBe(false)
    } finally {
      await tool.database.close()
    }
  })
})

describe('answers wait for their writes to be on disk', () => {
  let app: TestApp
  beforeEach(async () => {
    app = await startTestApp({ TEST_CLOCK: 'true' })
  })
  afterEach(() => app.close())

  // SQLite's group commit; on PostgreSQL every commit is durable when it returns (docs/scale-out.md).
  test.skipIf(onPostgres)('a write is fsynced before its answer leaves; concurrent writes share fsyncs', async () => {
    const before = app.deps.durable.stats().flushes
    const res = await app.fetch('/api/v1/_test/probes', { method: 'POST', json: { value: 'one' } })
    expect(res.status).toBe(201)
    // Checked the moment the answer arrived: nothing this request committed is still pending.
    expect(app.deps.durable.stats().pendingChanges).toBe(0)
    expect(app.deps.durable.stats().flushes).toBeGreaterThan(before)
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        app.fetch('/api/v1/_test/probes', { method: 'POST', json: { value: `v${i}` }, headers: { 'idempotency-key': `k-${i}` } }).then((r) => r.status),
      ),
    )
    expect(statuses).toEqual(statuses.map(() => 201))
    expect(app.deps.durable.stats().pendingChanges).toBe(0)
  })
})
