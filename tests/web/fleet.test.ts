import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { enroll } from '../../agent/lib/enroll'
import { memoryLogger } from '../../agent/lib/log'
import { Machine } from '../../agent/lib/machine'
import { type AgentHandle, startAgent } from '../../agent/lib/session'
import { expectAccessible, expectClean, journey, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * A new owner's fleet (docs/console.md, docs/fleet.md): add a server with a one-time token shown
 * once, enrol the reference agent in simulate mode with it, watch it go online (and offline) without
 * reloading, read its detail and charts, send a command and watch it succeed.
 */

let c: ConsoleSession
let stateDir: string
let agent: AgentHandle | null = null
let serverId = ''

beforeAll(async () => {
  c = await startConsole()
  stateDir = mkdtempSync(join(tmpdir(), 'gpuhq-console-agent-'))
  await signedInOwner(c)
}, 120_000)
afterAll(async () => {
  await agent?.stop()
  await c?.close()
  rmSync(stateDir, { recursive: true, force: true })
})

const runAgent = () => startAgent({ stateDir, log: memoryLogger(), simulate: 2, heartbeatIntervalS: 1, telemetryIntervalS: 1, reconnectBaseMs: 50 })
const row = () => c.page.locator(`tr[data-server="${serverId}"]`)

describe('the fleet', () => {
  test(
    'starts empty, with the way to add a server',
    () =>
      journey(c, async () => {
        await c.page.getByText('No servers yet').waitFor({ timeout: WAIT })
        await expectAccessible(c, 'fleet-1-empty')
      }),
    60_000,
  )

  test(
    'a one-time token is shown once; the agent enrols with it and the page sees it come online',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.getByRole('link', { name: 'Add a server' }).first().click()
        await page.getByRole('heading', { level: 1, name: 'Add a server' }).waitFor({ timeout: WAIT })
        await page.getByRole('button', { name: 'Create a one-time token' }).click()
        const shown = page.getByTestId('init-token')
        await shown.waitFor({ timeout: WAIT })
        const token = (await shown.textContent())!.trim()
        expect(token).toMatch(/^gpuhq_init_[A-Za-z0-9]{46}$/)
        // Never in an address, and the installer reads it from a file.
        expect(page.url()).not.toContain(token)
        expect(c.requests.some((u) => u.includes(token))).toBe(false)
        expect(await page.locator('pre').allTextContents()).toEqual([
          'install -m 600 /dev/null /root/gpuhq-init-token && cat > /root/gpuhq-init-token',
          `curl -fsSL ${c.origin}/agent/install.sh | sudo sh -s -- --url ${c.origin} --token-file /root/gpuhq-init-token`,
        ])
        await page.getByText('Waiting for the server to enrol').waitFor({ timeout: WAIT })
        await expectAccessible(c, 'fleet-2-token')

        const facts = await new Machine({ simulate: 2, stateDir }).facts()
        const credential = await enroll({ url: c.origin, token, stateDir, facts, log: memoryLogger(), simulate: 2 })
        serverId = credential.server_id
        agent = await runAgent()
        await page.locator('.note', { hasText: 'enrolled' }).locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
        await c.shot('fleet-3-enrolled')
      }),
    120_000,
  )

  test(
    'the fleet shows the server online, then offline the moment its agent stops, without a reload',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.getByRole('link', { name: 'Back to the fleet' }).click()
        await row().locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
        // Followed on the live event stream (docs/events.md), not by polling.
        await page.locator('.live', { hasText: 'Live' }).waitFor({ timeout: WAIT })
        expect(c.requests.some((u) => new URL(u).pathname === '/api/v1/events/stream')).toBe(true)
        await page.locator('.tile', { hasText: 'Online' }).locator('dd', { hasText: '1' }).waitFor({ timeout: WAIT })
        await expectAccessible(c, 'fleet-4-online')
        const loads = c.requests.filter((u) => new URL(u).pathname === '/').length

        await agent!.stop()
        agent = null
        await row().locator('.badge', { hasText: 'offline' }).waitFor({ timeout: WAIT })
        agent = await runAgent()
        await row().locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
        expect(c.requests.filter((u) => new URL(u).pathname === '/').length).toBe(loads)
      }),
    120_000,
  )

  test(
    'the server page shows facts, vitals per GPU and the metric charts',
    () =>
      journey(c, async () => {
        const { page } = c
        await row().getByRole('link').first().click()
        await page.getByRole('heading', { name: 'GPU vitals' }).waitFor({ timeout: WAIT })
        // Presence follows on this page too: offline and back without a reload.
        const presence = page.locator('dd', { has: page.locator('.badge') }).first()
        await presence.locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
        await agent!.stop()
        agent = null
        await presence.locator('.badge', { hasText: 'offline' }).waitFor({ timeout: WAIT })
        agent = await runAgent()
        await presence.locator('.badge', { hasText: 'online' }).waitFor({ timeout: WAIT })
        // Telemetry arrives every second; the vitals fill in on the next live refresh.
        await page
          .locator('section', { has: page.getByRole('heading', { name: 'GPU vitals' }) })
          .locator('td', { hasText: '°C' })
          .first()
          .waitFor({ timeout: WAIT })
        const rollup = await c.app.fetch('/api/v1/_test/jobs/metrics.rollup/run', { method: 'POST' })
        expect(rollup.status).toBe(200)
        await page.getByRole('button', { name: 'Refresh' }).first().click()
        await page.locator('figure.chart', { hasText: 'GPU temperature' }).locator('canvas').waitFor({ timeout: WAIT })
        await page.getByRole('button', { name: '7 days' }).click()
        await page.locator('figure.chart', { hasText: 'GPU temperature' }).waitFor({ timeout: WAIT })
        await expectAccessible(c, 'server-1-detail')
      }),
    120_000,
  )

  test(
    'a command sent from the server page is followed until it succeeds, with its result and timeline',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.locator('summary', { hasText: 'Send a command' }).click()
        await page.getByLabel('Command', { exact: true }).selectOption('diagnostics.run')
        await page.getByRole('button', { name: 'Send the command' }).click()
        await page.getByRole('heading', { level: 1, name: 'Command diagnostics.run' }).waitFor({ timeout: WAIT })
        await page.locator('dd', { hasText: 'succeeded' }).waitFor({ timeout: WAIT })
        await page.getByRole('heading', { name: 'Result' }).waitFor({ timeout: WAIT })
        expect(await page.locator('pre').first().textContent()).toContain('"simulated": true')
        await page.getByRole('table', { name: undefined }).first().waitFor({ timeout: WAIT })
        await expectAccessible(c, 'command-1-succeeded')

        await open(c, '/commands', 'Commands')
        await page.locator('tr[data-command]', { hasText: 'diagnostics.run' }).locator('.badge', { hasText: 'succeeded' }).waitFor({ timeout: WAIT })
        await expectAccessible(c, 'commands-1-list')
      }),
    120_000,
  )

  test(
    'a wrong parameter is named next to its field',
    () =>
      journey(c, async () => {
        const { page } = c
        await page.getByLabel('Server', { exact: true }).selectOption(serverId)
        await page.getByLabel('Command', { exact: true }).selectOption('gpu.set_power_limit')
        await page.getByLabel('watts').fill('5')
        await page.getByRole('button', { name: 'Send the command' }).click()
        const error = page.locator('.field.invalid', { has: page.getByLabel('watts') }).locator('.field-error')
        await error.waitFor({ timeout: WAIT })
        expect(await error.textContent()).toContain('too small')
        await expectAccessible(c, 'commands-2-refused')
      }),
    60_000,
  )

  test(
    'maintenance, a group and tags change the fleet, and the filters find the server by them',
    () =>
      journey(c, async () => {
        const { page } = c
        await open(c, '/', 'Fleet')
        await page.getByLabel('New group').fill('Frankfurt')
        await page.getByRole('button', { name: 'Create the group' }).click()
        await page.getByRole('cell', { name: 'Frankfurt', exact: true }).waitFor({ timeout: WAIT })

        await open(c, `/servers/${serverId}`, /.+/)
        await page.getByRole('form', { name: 'Declare maintenance' }).getByLabel('Reason (optional)').fill('replacing fans')
        await page.getByRole('button', { name: 'Declare maintenance' }).click()
        // The maintenance badge, drawn from the detail read again after the declaration (its new
        // version is what the settings form sends as If-Match): not any "since" on the page (the
        // readiness section has its own), which let the form save with the old version.
        await page.locator('.badge', { hasText: 'In maintenance' }).waitFor({ timeout: WAIT })
        await page.getByLabel('Group').selectOption({ label: 'Frankfurt' })
        await page.getByLabel('Tags').fill('site:fra-1 owned')
        await page.getByRole('button', { name: 'Save the settings' }).click()
        await page.getByText('Saved.').waitFor({ timeout: WAIT })

        await open(c, '/', 'Fleet')
        await row().locator('.badge', { hasText: 'maintenance' }).waitFor({ timeout: WAIT })
        await page.locator('#filter-tag').fill('site')
        await row().waitFor({ timeout: WAIT })
        await page.locator('#filter-tag').fill('site:ber-2')
        await page.getByText('No server matches these filters.').waitFor({ timeout: WAIT })
        await page.getByRole('button', { name: 'Clear filters' }).click()
        await page.locator('#filter-group_id').selectOption({ label: 'Frankfurt' })
        await row().waitFor({ timeout: WAIT })
        await expectAccessible(c, 'fleet-5-filtered')
      }),
    120_000,
  )

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})
