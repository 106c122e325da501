import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import { afterCommit, inTransaction, migrateDatabase, openDatabase, relaxedDb, withTransaction, type Database_ } from '../../db/client'
import { serviceSettings } from '../../db/schema'
import { freshPostgresDatabase, onPostgres } from '../support/postgres'

/**
 * The asynchronous data layer (docs/scale-out.md "One data layer, two databases"): a transaction's
 * callback awaits between its statements, and other code runs meanwhile. What that other code writes
 * never lands inside the transaction (so a rollback cannot take it along), what the transaction wrote
 * is not seen by others before it commits, and what waits for the commit runs after it, outside.
 * Run on SQLite, and on PostgreSQL in the suite's PostgreSQL pass.
 */
let database: Database_
let cleanup: () => Promise<void>

beforeAll(async () => {
  if (onPostgres) {
    const fresh = await freshPostgresDatabase()
    database = openDatabase(fresh.url)
    cleanup = fresh.drop
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhq-async-'))
    database = openDatabase(join(dir, 'gpuhq.db'))
    cleanup = async () => rmSync(dir, { recursive: true, force: true })
  }
  await migrateDatabase(database)
})
afterAll(async () => {
  await database.close()
  await cleanup()
})

const put = (key: string) => database.db.insert(serviceSettings).values({ key, value: key, updatedAt: 1 }).run()
const has = async (key: string) => (await database.db.select().from(serviceSettings).where(eq(serviceSettings.key, key)).get()) !== undefined
/** A turn of the event loop: timers, I/O and other requests' continuations run. */
const elsewhere = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

describe('a transaction that awaits', () => {
  test("another request's write made while it is open survives its rollback", async () => {
    // The other request's code is set up outside the transaction and let go from inside it.
    let go!: () => void
    const outside = new Promise<void>((resolve) => (go = resolve)).then(() => put('outside-1'))
    await expect(
      withTransaction(database.db, async (tx) => {
        await tx.insert(serviceSettings).values({ key: 'inside-1', value: 'x', updatedAt: 1 }).run()
        go()
        await elsewhere()
        await elsewhere()
        throw new Error('refused')
      }),
    ).rejects.toThrow('refused')
    await outside
    expect(await has('outside-1')).toBe(true)
    expect(await has('inside-1')).toBe(false)
  })

  test('what it wrote is not seen outside it before it commits, and is after', async () => {
    let seenBefore = null as boolean | null
    let release!: () => void
    const gate = new Promise<void>((resolve) => (release = resolve))
    let wrote!: () => void
    const written = new Promise<void>((resolve) => (wrote = resolve))
    // Another request's read, set up outside the transaction, once the transaction has written.
    const reader = written.then(async () => {
      if (onPostgres) {
        // It reads the committed state beside the open transaction, on another connection.
        seenBefore = await has('pending-1')
        release()
      } else {
        // One connection: the read waits for the transaction's turn to end, so it sees the commit.
        const read = has('pending-1')
        release()
        seenBefore = await read
      }
    })
    const writer = withTransaction(database.db, async (tx) => {
      await tx.insert(serviceSettings).values({ key: 'pending-1', value: 'x', updatedAt: 1 }).run()
      wrote()
      await gate
    })
    await Promise.all([writer, reader])
    expect(seenBefore).toBe(!onPostgres)
    expect(await has('pending-1')).toBe(true)
  })

  test('afterCommit runs after the commit, outside the transaction; a rollback drops it', async () => {
    const ran: string[] = []
    await withTransaction(database.db, async (tx) => {
      await tx.insert(serviceSettings).values({ key: 'hooked-1', value: 'x', updatedAt: 1 }).run()
      afterCommit(tx, () => {
        ran.push(`committed:${inTransaction(database.db)}`)
      })
      ran.push('body')
    })
    expect(ran).toEqual(['body', 'committed:false'])
    await withTransaction(database.db, async () => {
      afterCommit(database.db, () => ran.push('never'))
      throw new Error('rolled back')
    }).catch(() => {})
    expect(ran).toEqual(['body', 'committed:false'])
  })

  test('a nested transaction is a savepoint: its failure, caught, undoes only its own writes', async () => {
    await withTransaction(database.db, async (tx) => {
      await tx.insert(serviceSettings).values({ key: 'outer-1', value: 'x', updatedAt: 1 }).run()
      await withTransaction(tx, async (inner) => {
        await inner.insert(serviceSettings).values({ key: 'inner-1', value: 'x', updatedAt: 1 }).run()
        throw new Error('inner refused')
      }).catch(() => {})
    })
    expect(await has('outer-1')).toBe(true)
    expect(await has('inner-1')).toBe(false)
  })

  test('many transactions at once each commit whole: none sees another half done', async () => {
    await database.db.insert(serviceSettings).values({ key: 'counter', value: '0', updatedAt: 1 }).run()
    const bump = () =>
      withTransaction(database.db, async (tx) => {
        const row = await tx.select().from(serviceSettings).where(eq(serviceSettings.key, 'counter')).get()
        await elsewhere()
        await tx
          .update(serviceSettings)
          .set({ value: String(Number(row!.value) + 1) })
          .where(eq(serviceSettings.key, 'counter'))
          .run()
      })
    await Promise.all(Array.from({ length: 8 }, bump))
    const row = await database.db.select().from(serviceSettings).where(eq(serviceSettings.key, 'counter')).get()
    expect(row!.value).toBe('8')
  })
})

describe.skipIf(!onPostgres)('on PostgreSQL, a pool', () => {
  test('a slow statement holds one connection, not the process: other statements answer while it runs', async () => {
    let slowDone = false
    const slow = database.db.run(sql`SELECT pg_sleep(3)`).then(() => {
      slowDone = true
    })
    // Twenty statements one after the other, each a round trip, all while the slow one runs.
    for (let i = 0; i < 20; i++) expect(await database.db.get<{ one: number }>(sql`SELECT 1 AS one`)).toEqual({ one: 1 })
    expect(slowDone).toBe(false)
    await slow
  })
})

describe('relaxed commits (db/client.ts relaxedDb)', () => {
  const synchronousCommit = async (db: typeof database.db) =>
    (await db.get<{ setting: string }>(sql`SELECT current_setting('synchronous_commit') AS setting`))?.setting

  test.skipIf(onPostgres)('on SQLite they are the database itself: the group commit makes every write durable', () => {
    expect(relaxedDb(database.db)).toBe(database.db)
  })

  test.skipIf(!onPostgres)('on PostgreSQL they commit without waiting for the flush; every other statement waits', async () => {
    expect(await synchronousCommit(relaxedDb(database.db))).toBe('off')
    expect(await synchronousCommit(database.db)).toBe('on')
    await withTransaction(database.db, async (tx) => {
      expect(await synchronousCommit(tx)).toBe('on')
    })
    // Nothing but plain statements: no transaction of its own, no hand-written text through it.
    await expect(withTransaction(relaxedDb(database.db), async () => {})).rejects.toThrow(/not a database opened by openDatabase/)
    // What a relaxed statement writes is committed at once, for every connection to see.
    await relaxedDb(database.db).insert(serviceSettings).values({ key: 'relaxed', value: 'relaxed', updatedAt: 1 }).run()
    expect(await has('relaxed')).toBe(true)
  })

  test.skipIf(!onPostgres)('are refused inside a transaction, which they would leave', async () => {
    await expect(
      withTransaction(database.db, async () => {
        relaxedDb(database.db)
      }),
    ).rejects.toThrow(/outside any transaction/)
  })
})

describe.skipIf(!onPostgres)('on PostgreSQL, a slow statement in one request', () => {
  test('leaves the process answering the others: /healthz and reads of the database answer while it runs', async () => {
    const { startTestApp } = await import('../support/app')
    const app = await startTestApp({ LOG_LEVEL: 'silent' })
    try {
      let slowDone = false
      const slow = app.fetch('/api/v1/_test/database/slow-statement', { method: 'POST', json: { ms: 4000 } }).then((r) => {
        slowDone = true
        return r
      })
      // Once the statement runs on the server (seen from another connection of the pool):
      for (;;) {
        const [running] = await app.deps.db.all<{ n: number }>(
          sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'`,
        )
        if (running!.n > 0) break
        await Bun.sleep(5)
      }
      for (let i = 0; i < 10; i++) {
        expect((await app.fetch('/healthz')).status).toBe(200)
        expect((await app.fetch('/readyz')).status).toBe(200) // reads the database
      }
      expect(slowDone).toBe(false)
      const answer = await slow
      expect(answer.status).toBe(200)
      expect(((await answer.json()) as { database: string }).database).toBe('postgres')
    } finally {
      await app.close()
    }
  })
})
