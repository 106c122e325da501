import { SERVICE_BUSY_TIMEOUT_MS } from '../../src/deps'
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { eq } from 'drizzle-orm'
import { inTransaction, migrateDatabase, openDatabase, withTransaction, type Database_, type DbOrTx } from '../../db/client'
import { serviceSettings } from '../../db/schema'
import { runFixture, tempDeps, type TempDeps } from './fixtures/temp-deps'

/** tempDeps is SQLite (a file in a temp dir): these tests look at the file's connection and locks too. */
let t: TempDeps
let database: Database_
beforeEach(async () => {
  t = await tempDeps()
  database = t.deps.database
})
afterEach(() => t.close())

const put = (db: DbOrTx, key: string) => db.insert(serviceSettings).values({ key, value: key, updatedAt: 1 }).run()
const keys = async () =>
  (await t.deps.db.select({ key: serviceSettings.key }).from(serviceSettings).all())
    .map((r) => r.key)
    .filter((k) => !k.startsWith('test_clock'))
    .sort()

describe('withTransaction', () => {
  test('commits what the callback wrote and returns its value', async () => {
    const result = await withTransaction(t.deps.db, async (tx) => {
      await put(tx, 'a')
      return 42
    })
    expect(result).toBe(42)
    expect(await keys()).toEqual(['a'])
  })

  test('a callback that throws rolls back everything it wrote and the error reaches the caller', async () => {
    await expect(
      withTransaction(t.deps.db, async (tx) => {
        await put(tx, 'a')
        throw new Error('refused')
      }),
    ).rejects.toThrow('refused')
    expect(await keys()).toEqual([])
  })

  test('a nested call is a savepoint: its failure, caught by the outer call, undoes only its own writes', async () => {
    await withTransaction(t.deps.db, async (tx) => {
      await put(tx, 'outer-before')
      try {
        await withTransaction(tx, async (inner) => {
          await put(inner, 'inner')
          throw new Error('inner refused')
        })
      } catch {
        // the outer verb decides to carry on
      }
      await put(tx, 'outer-after')
    })
    expect(await keys()).toEqual(['outer-after', 'outer-before'])
  })

  test('a nested call that succeeds commits or rolls back together with the outer call', async () => {
    await withTransaction(t.deps.db, (tx) => withTransaction(tx, (inner) => put(inner, 'kept')))
    await expect(
      withTransaction(t.deps.db, async (tx) => {
        await withTransaction(tx, (inner) => put(inner, 'undone'))
        throw new Error('outer refused')
      }),
    ).rejects.toThrow('outer refused')
    expect(await keys()).toEqual(['kept'])
  })

  test('savepoints nest more than one level deep', async () => {
    await withTransaction(t.deps.db, async (tx) => {
      await withTransaction(tx, async (one) => {
        await put(one, 'one')
        try {
          await withTransaction(one, async (two) => {
            await put(two, 'two')
            throw new Error('x')
          })
        } catch {}
      })
    })
    expect(await keys()).toEqual(['one'])
  })

  // Until the data layer became asynchronous (issue 41) an async callback was refused outright
  // (/synchronous/); now it is the norm, and what must hold is that nothing it wrote, before or
  // after an await, outlives its failure, and that the connection is left outside any transaction.
  test('an async callback that fails after an await keeps nothing it wrote, before or after the await', async () => {
    await expect(
      withTransaction(t.deps.db, async (tx: DbOrTx) => {
        await put(tx, 'before-await')
        await Bun.sleep(1)
        await put(tx, 'after-await')
        throw new Error('refused after the await')
      }),
    ).rejects.toThrow('refused after the await')
    await Bun.sleep(20)
    expect(await keys()).toEqual([])
    expect(t.deps.database.sqlite!.inTransaction).toBe(false)
    expect(inTransaction(t.deps.db)).toBe(false)
  })

  test('a callback whose returned promise rejects has its writes rolled back', async () => {
    await expect(withTransaction(t.deps.db, (tx: DbOrTx) => put(tx, 'sync-part').then(() => Promise.reject(new Error('refused'))))).rejects.toThrow('refused')
    expect(await keys()).toEqual([])
  })

  test('a top-level transaction takes the write lock at BEGIN, before its first write', async () => {
    const other = new Database(t.dbPath)
    other.exec('PRAGMA busy_timeout = 0')
    try {
      await withTransaction(t.deps.db, async (tx) => {
        await tx.select().from(serviceSettings).all() // a read only: a deferred BEGIN would hold no write lock yet
        expect(() => other.exec('BEGIN IMMEDIATE')).toThrow(/locked|busy/i)
      })
      other.exec('BEGIN IMMEDIATE') // released at commit
      other.exec('ROLLBACK')
    } finally {
      other.close()
    }
  })

  test('two processes doing read-then-write transactions on one WAL file never fail with SQLITE_BUSY', async () => {
    const second = openDatabase(t.dbPath)
    await migrateDatabase(second)
    await put(second.db, 'counter')
    await second.db.update(serviceSettings).set({ value: '0' }).where(eq(serviceSettings.key, 'counter')).run()
    await second.close()
    const iterations = 150
    const startAt = String(Date.now() + 400)
    const results = await Promise.all([
      runFixture('read-then-write.ts', [t.dbPath, String(iterations), startAt]),
      runFixture('read-then-write.ts', [t.dbPath, String(iterations), startAt]),
    ])
    for (const r of results) {
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      expect(JSON.parse(r.stdout)).toEqual({ done: iterations, busy: 0, other: [] })
    }
    const counter = await t.deps.db.select().from(serviceSettings).where(eq(serviceSettings.key, 'counter')).get()
    expect(counter!.value).toBe(String(2 * iterations))
  })
})

describe('connection settings', () => {
  test('every connection runs in WAL with foreign keys on and a busy timeout (short in the service); tools fsync each commit, the service groups them', async () => {
    const fresh = openDatabase(t.dbPath)
    try {
      for (const { sqlite } of [database, fresh]) {
        expect(sqlite!.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' })
        expect(sqlite!.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 })
      }
      // synchronous=FULL for a tool's connection; NORMAL plus the barrier of db/durability.ts in the service.
      expect(fresh.sqlite!.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 })
      expect(database.sqlite!.query('PRAGMA synchronous').get()).toEqual({ synchronous: 1 })
      // Tools wait for another process's lock; the service waits briefly and retries without blocking.
      expect((fresh.sqlite!.query('PRAGMA busy_timeout').get() as { timeout: number }).timeout).toBeGreaterThanOrEqual(1000)
      expect((database.sqlite!.query('PRAGMA busy_timeout').get() as { timeout: number }).timeout).toBe(SERVICE_BUSY_TIMEOUT_MS)
    } finally {
      await fresh.close()
    }
  })
})
