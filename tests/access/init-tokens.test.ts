import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { join } from 'node:path'
import { withTransaction } from '../../db/client'
import { claimInitToken } from '../../src/modules/tokens/init-tokens.service'
import { hashSecret } from '../../src/platform/secrets'
import { advance } from '../support/accounts'
import { addMember, call, insertServer, mintPat, mutateAt, newTenant, serviceNowUs, setAccountState, setPlan, type Member } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/** Agent init tokens: docs/access.md "Agent init tokens". */

const INIT = /^gpuhq_init_[0-9A-Za-z]{46}$/
type MintedInit = {
  id: string
  token: string
  server_id: string | null
  purpose: string | null
  expected_fingerprint: string | null
  expires_at: string
  install_command: string
}

let app: TestApp
let owner: Member
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newTenant(app, 'init-owner')
})
afterAll(() => app.close())

const mint = (caller: Member | string, json: Record<string, unknown> = {}) => call(app, 'POST', '/tokens/init', caller, { json })
async function minted(caller: Member | string, json: Record<string, unknown> = {}) {
  const res = await mint(caller, json)
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status: 201 })
  return JSON.parse(text) as { id: string; token: string; expires_at: string; server_id: string | null; install_command: string }
}
/** A child's stdout: `ready` settles once it printed "ready", `all` at its end with everything. */
function readLines(stream: ReadableStream<Uint8Array>) {
  let text = ''
  let markReady = () => {}
  const ready = new Promise<void>((resolve) => (markReady = resolve))
  const all = (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      if (text.includes('ready\n')) markReady()
    }
    markReady()
    return text
  })()
  return { ready, all }
}
const claim = async (token: string) => await withTransaction(app.deps.db, (tx) => claimInitToken(tx, app.deps, token))

describe('minting agent init tokens', () => {
  test('an operator mints a one-hour token by default, shown once, with an install command that keeps it off the command line', async () => {
    const operator = await addMember(app, owner.tenantId, 'operator')
    const res = await mint(operator, { purpose: 'rack 4' })
    expect(res.status).toBe(201)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as MintedInit
    expect(body.token).toMatch(INIT)
    expect(body).toMatchObject({ server_id: null, purpose: 'rack 4', expected_fingerprint: null })
    expect(Math.abs(Date.parse(body.expires_at) - (serviceNowUs(app) / 1000 + 3600_000))).toBeLessThan(5000)
    const row = (await app.deps.db.get(sql`SELECT expires_at - created_at AS ttl, token_hash FROM init_tokens WHERE id = ${body.id}`)) as {
      ttl: number
      token_hash: string
    }
    expect(row).toEqual({ ttl: 3600 * 1_000_000, token_hash: hashSecret(body.token) })
    expect(body.install_command).toMatch(/--token-file|--token-stdin/)
    expect(body.install_command).not.toContain(body.token)
  })

  test('a lifetime over one hour is refused; exactly one hour is accepted', async () => {
    const server = await insertServer(app, owner.tenantId)
    const res = await mint(owner, { server_id: server, expires_in_s: 3601 })
    expect((await expectProblem(res, 422, 'validation_failed')).errors![0]!.path).toBe('/expires_in_s')
    const ok = await minted(owner, { server_id: server, expires_in_s: 3600, expected_fingerprint: 'sha256:abc' })
    expect(ok.server_id).toBe(server)
  })

  test("a token bound to another tenant's server answers 404, as if the server did not exist", async () => {
    const other = await newTenant(app, 'init-other')
    const foreign = await insertServer(app, other.tenantId)
    await expectProblem(await mint(owner, { server_id: foreign }), 404, 'not_found')
    await expectProblem(await mint(owner, { server_id: crypto.randomUUID() }), 404, 'not_found')
  })

  test('on the free plan one unbound outstanding token reaches the limit, while tokens bound to a server are always allowed', async () => {
    const free = await newTenant(app, 'init-free')
    await minted(free)
    await expectProblem(await mint(free), 409, 'server_limit_reached')
    const server = await insertServer(app, free.tenantId)
    const bound = await minted(free, { server_id: server })
    expect(bound.server_id).toBe(server)
    await expectProblem(await mint(free), 409, 'server_limit_reached')
  })

  test('on the free plan with one enrolled server an unbound token is refused but one bound to that server is allowed', async () => {
    const free = await newTenant(app, 'init-enrolled')
    const server = await insertServer(app, free.tenantId)
    await expectProblem(await mint(free), 409, 'server_limit_reached')
    expect((await minted(free, { server_id: server })).server_id).toBe(server)
    await app.deps.db.run(sql`UPDATE servers SET decommissioned_at = ${serviceNowUs(app)} WHERE id = ${server}`)
    await minted(free)
  })

  test('the starter plan allows ten unbound tokens, and an expired one no longer counts', async () => {
    const starter = await newTenant(app, 'init-starter')
    await setPlan(app, starter.tenantId, 'starter')
    for (let i = 0; i < 10; i++) await minted(starter, { expires_in_s: 60 })
    await expectProblem(await mint(starter), 409, 'server_limit_reached')
    await advance(app, 61)
    await minted(starter)
  })

  test('a frozen account, a tenant without a plan, a viewer and a token without servers:write are refused', async () => {
    const tenant = await newTenant(app, 'init-refused')
    await setAccountState(app, tenant.tenantId, 'frozen')
    await expectProblem(await mint(tenant), 403, 'account_frozen')
    await setAccountState(app, tenant.tenantId, 'active')
    await setPlan(app, tenant.tenantId, null)
    await expectProblem(await mint(tenant), 409, 'plan_required')
    await setPlan(app, tenant.tenantId, 'starter')

    const viewer = await addMember(app, tenant.tenantId, 'viewer')
    await expectProblem(await mint(viewer), 403, 'forbidden')
    const reader = await mintPat(app, tenant, { scopes: ['servers:read', 'commands:write'] })
    await expectProblem(await mint(reader.token), 403, 'forbidden')
    const writer = await mintPat(app, tenant, { scopes: ['servers:write'] })
    expect((await minted(writer.token)).token).toMatch(INIT)
  })
})

describe('claiming an init token (the consumption primitive of POST /agent/register)', () => {
  test('a token is claimed once; a second claim, an expired token or a mutated one give nothing', async () => {
    const server = await insertServer(app, owner.tenantId)
    const a = await minted(owner, { server_id: server })
    expect(await claim(mutateAt(a.token, 15))).toBeNull()
    const row = await claim(a.token)
    expect(row).toMatchObject({ id: a.id, tenantId: owner.tenantId, serverId: server })
    expect(row!.claimedAt).not.toBeNull()
    expect(await claim(a.token)).toBeNull()

    const b = await minted(owner, { server_id: server, expires_in_s: 60 })
    await advance(app, 61)
    expect(await claim(b.token)).toBeNull()
    expect(await app.deps.db.get(sql`SELECT claimed_at FROM init_tokens WHERE id = ${b.id}`)).toEqual({ claimed_at: null })
    expect(await claim('gpuhq_init_' + 'A'.repeat(46))).toBeNull()
  })

  test('two OS processes claiming the same token at the same moment: exactly one succeeds, every time', async () => {
    const server = await insertServer(app, owner.tenantId)
    const dbPath = app.databaseUrl.replace(/^file:/, '')
    const script = join(import.meta.dir, 'fixtures', 'claim-init-token.ts')
    // Rounds where both processes reached the start line in time are true races; a loaded machine
    // may make one late (then the claims merely follow each other), so run until five true races.
    let races = 0
    for (let round = 0; round < 12 && races < 5; round++) {
      const { id, token } = await minted(owner, { server_id: server })
      const procs = [0, 1].map(() => Bun.spawn([process.execPath, script, dbPath], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', timeout: 15_000 }))
      const outputs = procs.map((p) => readLines(p.stdout))
      // Both processes hold the database open before either learns the token and the start instant.
      await Promise.all(outputs.map((o) => o.ready))
      const go = `${token} ${Date.now() + 250}`
      for (const p of procs) {
        p.stdin.write(go)
        p.stdin.end()
      }
      const results = await Promise.all(
        procs.map(async (p, i) => {
          const [out, err, code] = await Promise.all([outputs[i]!.all, new Response(p.stderr).text(), p.exited])
          expect({ code, err }).toEqual({ code: 0, err: '' })
          return JSON.parse(out.trim().split('\n').pop()!) as { claimed: boolean; id: string | null; late: boolean }
        }),
      )
      if (!results.some((r) => r.late)) races++
      expect(results.filter((r) => r.claimed).length).toBe(1)
      expect(results.find((r) => r.claimed)!.id).toBe(id)
      const row = (await app.deps.db.get(sql`SELECT claimed_at FROM init_tokens WHERE id = ${id}`)) as { claimed_at: number | null }
      expect(row.claimed_at).not.toBeNull()
    }
    expect(races).toBe(5)
  }, 60_000)
})
