import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { newTenant, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * Issue 34, "Jobs isolate tenants", live.prune: each tenant's cap (LIVE_EVENTS_MAX_PER_TENANT) is
 * its own part of the job's per-tenant error boundary. Two tenants hold 150 events each against a
 * cap of 100; deleting the first tenant's events fails, as a broken disk or a bug would (a trigger on
 * this app's own connection refusing them). The second tenant is still pruned to the cap, the run
 * is partial, and the first is not tried again at the next run. The events are written straight
 * into the buffer: what they say does not matter to the prune.
 */
let app: TestApp
let first: Member
let second: Member

type Run = { outcome: string; detail: string | null }
async function prune(): Promise<Run> {
  const res = await app.fetch('/api/v1/_test/jobs/live.prune/run', { method: 'POST' })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text) as Run
}
const countOf = async (tenantId: string) =>
  ((await app.deps.db.get(sql`SELECT count(*) AS n FROM live_events WHERE tenant_id = ${tenantId}`)) as { n: number }).n

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent', LIVE_EVENTS_MAX_PER_TENANT: '100' })
  ;[first, second] = [await newTenant(app, 'prune-a'), await newTenant(app, 'prune-b')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1)) as [Member, Member]
  for (const m of [first, second])
    for (let i = 0; i < 150; i++)
      // seq: the tenant's own event ids, as the producers hand them out (live_event_sequences)
      await app.deps.db.run(
        sql`INSERT INTO live_events (tenant_id, seq, server_id, type, payload, created_at) VALUES (${m.tenantId}, ${i + 1}, NULL, ${'test.event'}, ${JSON.stringify({ i })}, ${app.deps.clock.nowUs()})`,
      )
  if (onPostgres)
    await app.deps.database.postgres!.exec(
      `CREATE FUNCTION prune_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.tenant_id = '${first.tenantId}' THEN RAISE EXCEPTION 'injected delete fault'; END IF; RETURN OLD; END $$;
       CREATE TRIGGER prune_fault BEFORE DELETE ON live_events FOR EACH ROW EXECUTE FUNCTION prune_fault()`,
    )
  else
    await app.deps.db.run(
      sql.raw(
        `CREATE TEMP TRIGGER prune_fault BEFORE DELETE ON live_events WHEN OLD.tenant_id = '${first.tenantId}' BEGIN SELECT RAISE(ABORT, 'injected delete fault'); END`,
      ),
    )
})
afterAll(async () => {
  if (onPostgres) await app.deps.database.postgres!.exec('DROP TRIGGER prune_fault ON live_events; DROP FUNCTION prune_fault()')
  await app.close()
})

test("a tenant whose events cannot be pruned does not stop the others' prune; the run is partial and the tenant waits out a backoff", async () => {
  const run = await prune()
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${first.tenantId} (`)
  expect(run.detail).toContain('injected delete fault')
  expect(run.detail).toContain('50 past the per-tenant cap')
  expect(await countOf(second.tenantId)).toBe(100)
  expect(await countOf(first.tenantId)).toBe(150)

  const next = await prune()
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
})
