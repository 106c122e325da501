import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { startTestApp, type TestApp } from '../support/app'
import { getCommand, inSeconds, issue, offlineServer } from '../support/commands'
import { advance, newOwner, ok, stopApp, type Owner } from '../support/fleet'
import { onPostgres } from '../support/postgres'

/**
 * Issue 34, "Jobs isolate tenants", commands.expire: each command's change is its own savepoint and
 * its own part of the job's per-tenant error boundary. Two tenants each queue a command for an
 * offline server with accept_by in a minute; writing the first tenant's commands fails, as a broken
 * disk or a bug would (a trigger on this app's own connection refusing the update). The second
 * tenant's command still becomes delivery_failed, the run is partial, and the first is not tried
 * again at the next tick.
 */
let app: TestApp
let first: Owner
let second: Owner

type Run = { outcome: string; detail: string | null }
const expire = () => ok<Run>(app.fetch('/api/v1/_test/jobs/commands.expire/run', { method: 'POST' }))

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  ;[first, second] = [await newOwner(app, 'expire-a', 'pro'), await newOwner(app, 'expire-b', 'pro')].sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1)) as [
    Owner,
    Owner,
  ]
})
afterAll(async () => {
  if (onPostgres) await app.deps.database.postgres!.exec('DROP TRIGGER expire_fault ON commands; DROP FUNCTION expire_fault()')
  await stopApp(app)
})

test("a command whose change fails does not stop the others'; the run is partial and that command waits out a backoff", async () => {
  const commands: string[] = []
  for (const owner of [first, second]) {
    const { server_id } = await offlineServer(app, owner)
    commands.push((await issue(app, owner, server_id, 'diagnostics.run', {}, { accept_by: inSeconds(app, 60) })).command_id)
  }
  if (onPostgres)
    await app.deps.database.postgres!.exec(
      `CREATE FUNCTION expire_fault() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.tenant_id = '${first.tenantId}' THEN RAISE EXCEPTION 'injected update fault'; END IF; RETURN NEW; END $$;
       CREATE TRIGGER expire_fault BEFORE UPDATE ON commands FOR EACH ROW EXECUTE FUNCTION expire_fault()`,
    )
  else
    await app.deps.db.run(
      sql.raw(
        `CREATE TEMP TRIGGER expire_fault BEFORE UPDATE ON commands WHEN OLD.tenant_id = '${first.tenantId}' BEGIN SELECT RAISE(ABORT, 'injected update fault'); END`,
      ),
    )

  await advance(app, 61)
  const run = await expire()
  expect(run.outcome).toBe('partial')
  expect(run.detail).toContain(`1 tenants failed: ${first.tenantId} (command ${commands[0]}: `)
  expect(run.detail).toContain('1 delivery_failed')
  expect((await getCommand(app, second, commands[1]!)).delivery_status).toBe('delivery_failed')
  expect((await getCommand(app, first, commands[0]!)).delivery_status).toBe('queued')

  await advance(app, 15)
  const next = await expire()
  expect(next).toMatchObject({ outcome: 'succeeded' })
  expect(next.detail).toContain('1 tenants waiting out a backoff after failing')
})
