import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { call, mintPat, newTenant } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * Leased counts (src/platform/rate-limit.ts, docs/scale-out.md "Leased counts"): on PostgreSQL a
 * process takes a read bucket's requests from the shared count a block at a time. The shared row is
 * then written once per block, not once per request, and the limit stays the limit: two instances
 * hammering one token together get its burst and what refilled meanwhile, give or take what a block
 * can leave unused, and the refused requests carry Retry-After.
 */
let app: TestApp
let other: TestApp
/** The smallest limit that leases: a burst of 300, then one request every 200 ms. */
const LIMIT = 300

beforeAll(async () => {
  if (!onPostgres) return
  app = await startTestApp({ LOG_LEVEL: 'error', RATE_LIMIT_TOKEN_PER_MINUTE: String(LIMIT) })
  other = await startTestApp({ LOG_LEVEL: 'error', DATABASE_URL: app.databaseUrl, RATE_LIMIT_TOKEN_PER_MINUTE: String(LIMIT) })
  // Every write of a rate_limits row, counted by a trigger of this test's own database.
  await app.deps.db.run(sql.raw(`CREATE TABLE lease_probe (bucket text NOT NULL)`))
  await app.deps.db.run(
    sql.raw(`CREATE FUNCTION lease_probe_note() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO lease_probe VALUES (NEW.bucket); RETURN NEW; END $$`),
  )
  await app.deps.db.run(sql.raw(`CREATE TRIGGER lease_probe AFTER INSERT OR UPDATE ON rate_limits FOR EACH ROW EXECUTE FUNCTION lease_probe_note()`))
})
afterAll(async () => {
  if (!onPostgres) return
  await other.close()
  await app.close()
})

const writesOf = async (tokenId: string) =>
  Number(((await app.deps.db.get(sql`SELECT count(*) AS n FROM lease_probe WHERE bucket = ${`token:${tokenId}`}`)) as { n: number }).n)

/** `loops` concurrent loops of `each` GET /me by `token`, spread over `targets`; the statuses. */
async function hammer(targets: TestApp[], token: string, loops: number, each: number): Promise<number[]> {
  const statuses: number[] = []
  await Promise.all(
    Array.from({ length: loops }, async (_, i) => {
      for (let n = 0; n < each; n++) {
        const res = await call(targets[(i + n) % targets.length]!, 'GET', '/me', token)
        if (res.status === 429) expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
        await res.arrayBuffer()
        statuses.push(res.status)
      }
    }),
  )
  return statuses
}

describe.skipIf(!onPostgres)('leased counts (PostgreSQL)', () => {
  test('a stream of reads by one token writes its shared row once per block, not once per request', async () => {
    const owner = await newTenant(app, 'lease-stream')
    const { token, id } = await mintPat(app, owner)
    const statuses = await hammer([app], token, 8, 16)
    expect(statuses.filter((s) => s === 200)).toHaveLength(128)
    // Blocks double up to 16 while they run out in time: far fewer writes than requests.
    expect(await writesOf(id)).toBeLessThanOrEqual(128 / 2)
  })

  test('two instances hammering one token together get its burst and what refilled, and no more', async () => {
    const owner = await newTenant(app, 'lease-limit')
    const { token } = await mintPat(app, owner)
    const started = performance.now()
    const statuses = await hammer([app, other], token, 16, 25)
    const seconds = (performance.now() - started) / 1000
    const ok = statuses.filter((s) => s === 200).length
    expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([])
    // The burst, plus one request per 200 ms of the run (generously rounded up), is the most.
    expect(ok).toBeLessThanOrEqual(LIMIT + Math.ceil(seconds * (LIMIT / 60)) + 1)
    // Blocks left unused at most a few of the burst.
    expect(ok).toBeGreaterThanOrEqual(LIMIT - 32)
    expect(statuses.length - ok).toBeGreaterThan(0)
  })
})
