import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { type AgentHandle, startAgent } from '../../agent/lib/session'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'
import { api, mintInitToken, ok, type Owner } from '../support/fleet'

/**
 * Issue 39 in the console: the server page's "Renter reports" section shows the report the sync
 * read from the Vast simulator, and a `diagnostics.dcgm` command's page draws its result per GPU
 * (a simulated agent over the real WebSocket).
 */

const KEY = 'vast-console-reports-key-0123456789'
let sim: MarketplaceASim
let c: ConsoleSession
let owner: Owner
let dir: string
let agent: AgentHandle | null = null
let serverId: string

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4343, email: 'host@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url })
  owner = await signedInOwner(c, 'pro')
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-console-reports-'))
  const stateDir = join(dir, 'state')
  const { token } = await mintInitToken(c.app, owner)
  const facts = await new Machine({ simulate: 2, stateDir }).facts()
  serverId = (await enroll({ url: c.origin, token, stateDir, facts, log: memoryLogger(), simulate: 2 })).server_id
  agent = await startAgent({ stateDir, log: memoryLogger(), simulate: 2, heartbeatIntervalS: 1, telemetryIntervalS: 5 })
  sim.putMachine(4343, 801, { hostname: 'rig-801', num_gpus: 2 })
  await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(
    await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: serverId, marketplace: 'marketplace_a', external_machine_id: '801' } }),
    201,
  )
}, 120_000)
afterAll(async () => {
  await agent?.stop()
  await c?.close()
  await sim?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('the server page shows the renter report the sync read', async () => {
  sim.setReports(801, [{ problem: 'GPU Not Working', message: 'GPU 1 fell off the bus', created_at: Date.now() / 1000 + 5 }])
  await ok(c.app.fetch('/api/v1/_test/jobs/marketplaces.sync/run', { method: 'POST' }))
  const { page } = c
  await open(c, `/servers/${serverId}`, /.+/)
  const section = page.locator('section', { has: page.getByRole('heading', { name: 'Renter reports' }) })
  await section.locator('td', { hasText: 'GPU Not Working' }).waitFor({ timeout: WAIT })
  expect(await section.locator('tbody tr').first().textContent()).toContain('GPU 1 fell off the bus')
  await expectAccessible(c, 'server-renter-reports')
  expectClean(c)
}, 120_000)

test('a diagnostics.dcgm command page draws each GPU’s verdict', async () => {
  const made = await ok<{ command_id: string }>(
    await api(c.app, owner, 'POST', '/commands', { json: { server_id: serverId, type: 'diagnostics.dcgm', params: { level: 1 } } }),
    201,
  )
  const { page } = c
  await open(c, `/commands/${made.command_id}`, 'Command diagnostics.dcgm')
  const table = page.locator('section[aria-label="DCGM result per GPU"]')
  await table.locator('tr[data-gpu="1"]').waitFor({ timeout: WAIT })
  expect(await table.locator('tr[data-gpu="0"]').textContent()).toContain('pass')
  expect(await table.locator('tbody tr').count()).toBe(2)
  await expectAccessible(c, 'command-dcgm')
  expectClean(c)
}, 120_000)
