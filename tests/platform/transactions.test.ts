import { SERVICE_BUSY_TIMEOUT_MS } from '../../src/deps'
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import { eq } from 'drizzle-orm'
import { migrateDatabase, openDatabase, withTransaction, type Database_, type DbOrTx } from '../../db/client'
import { serviceSettings } from '../../db/schema'
import { runFixture, tempDeps, type TempDeps } from './fixtures/temp-deps'

let t: TempDeps
let database: Database_
beforeEach(() => {
  t = tempDeps()
  database = { sqlite: t.deps.sqlite, db: t.deps.db, path: t.dbPath }
})
afterEach(() => t.close())

const put = (db: DbOrTx, key: string) => db.insert(serviceSettings).values({ key, value: key, updatedAt: 1 }).run()
const keys = () =>
  t.deps.db
    .select({ key: serviceSettings.key })
    .from(serviceSettings)
    .all()
    .map((r) => r.key)
    .filter((k) => !k.startsWith('test_clock'))
    .sort()

describe('withTransaction', () => {
  test('commits what the callback wrote and returns its value', () => {
    const result = withTransaction(t.deps.db, (tx) => {
      put(tx, 'a')
      return 42
    })
    expect(result).toBe(42)
    expect(keys()).toEqual(['a'])
  })

  test('a callback that throws rolls back everything it wrote and the error reaches the caller', () => {
    expect(() =>
      withTransaction(t.deps.db, (tx) => {
        put(tx, 'a')
        throw new Error('refused')
      }),
    ).toThrow('refused')
    expect(keys()).toEqual([])
  })

  test('a nested call is a savepoint: its failure, caught by the outer call, undoes only its own writes', () => {
    withTransaction(t.deps.db, (tx) => {
      put(tx, 'outer-before')
      try {
        withTransaction(tx, (inner) => {
          put(inner, 'inner')
          throw new Error('inner refused')
        })
      } catch {
        // the outer verb decides to carry on
      }
      put(tx, 'outer-after')
    })
    expect(keys()).toEqual(['outer-after', 'outer-before'])
  })

  test('a nested call that succeeds commits or rolls back together with the outer call', () => {
    withTransaction(t.deps.db, (tx) => withTransaction(tx, (inner) => put(inner, 'kept')))
    expect(() =>
      withTransaction(t.deps.db, (tx) => {
        withTransaction(tx, (inner) => put(inner, 'undone'))
        throw new Error('outer refused')
      }),
    ).toThrow('outer refused')
    expect(keys()).toEqual(['kept'])
  })

  test('savepoints nest more than one level deep', () => {
    withTransaction(t.deps.db, (tx) => {
      withTransaction(tx, (one) => {
        put(one, 'one')
        try {
          withTransaction(one, (two) => {
            put(two, 'two')
            throw new Error('x')
          })
        } catch {}
      })
    })
    expect(keys()).toEqual(['one'])
  })

  test('an async callback is refused and nothing it writes, before or after an await, is kept', async () => {
    expect(() =>
      withTransaction(t.deps.db, (async (tx: DbOrTx) => {
        put(tx, 'before-await')
        await Bun.sleep(1)
        put(tx, 'after-await')
      }) as never),
    ).toThrow(/synchronous/)
    await Bun.sleep(20)
    expect(keys()).toEqual([])
    expect(t.deps.sqlite.inTransaction).toBe(false)
  })

  test('a callback that returns a promise is refused and its synchronous writes are rolled back', () => {
    expect(() =>
      withTransaction(t.deps.db, ((tx: DbOrTx) => {
        put(tx, 'sync-part')
        return Promise.resolve(1)
      }) as never),
    ).toThrow(/synchronous/)
    expect(keys()).toEqual([])
  })

  test('a top-level transaction takes the write lock at BEGIN, before its first write', () => {
    const other = new Database(t.dbPath)
    other.exec('PRAGMA busy_timeout = 0')
    try {
      withTransaction(t.deps.db, (tx) => {
        tx.select().from(serviceSettings).all() // a read only: a deferred BEGIN would hold no write lock yet
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
    migrateDatabase(second)
    put(second.db, 'counter')
    second.db.update(serviceSettings).set({ value: '0' }).where(eq(serviceSettings.key, 'counter')).run()
    second.sqlite.close()
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
    const counter = t.deps.db.select().from(serviceSettings).where(eq(serviceSettings.key, 'counter')).get()
    expect(counter!.value).toBe(String(2 * iterations))
  })
})

describe('connection settings', () => {
  test('every connection runs in WAL with foreign keys on and a busy timeout (short in the service); tools fsync each commit, the service groups them', () => {
    const fresh = openDatabase(t.dbPath)
    try {
      for (const { sqlite } of [database, fresh]) {
        expect(sqlite.query('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' })
        expect(sqlite.query('PRAGMA foreign_keys').get()).toEqual({ foreign_keys: 1 })
      }
      // synchronous=FULL for a tool's connection; NORMAL plus the barrier of db/durability.ts in the service.
      expect(fresh.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 2 })
      expect(database.sqlite.query('PRAGMA synchronous').get()).toEqual({ synchronous: 1 })
      // Tools wait for another process's lock; the service waits briefly and retries without blocking.
      expect((fresh.sqlite.query('PRAGMA busy_timeout').get() as { timeout: number }).timeout).toBeGreaterThanOrEqual(1000)
      expect((database.sqlite.query('PRAGMA busy_timeout').get() as { timeout: number }).timeout).toBe(SERVICE_BUSY_TIMEOUT_MS)
    } finally {
      fresh.sqlite.close()
    }
  })
})
