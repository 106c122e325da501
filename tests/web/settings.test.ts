import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { enrolAgent, RawAgent, type Owner } from '../support/fleet'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * The account's settings in the console: notification rules and a quiet window, an email channel and
 * a test, personal access tokens shown once and revoked, alert incidents acknowledged and resolved,
 * AI-assistant access, and a pricing policy (plan pro, which has strategy and AI access).
 */

let c: ConsoleSession
let owner: Owner

beforeAll(async () => {
  c = await startConsole()
  owner = await signedInOwner(c, 'pro')
}, 120_000)
afterAll(() => c?.close())

describe('notifications', () => {
  test('a quiet window is set, saved and still there after a reload', async () => {
    const { page } = c
    await open(c, '/notifications', 'Notifications')
    await expectAccessible(c, 'notifications-1')
    await page.getByLabel('Hold non-critical notifications during quiet hours').check()
    await page.getByLabel('From', { exact: true }).fill('22:00')
    await page.getByLabel('To', { exact: true }).fill('07:00')
    await page.getByLabel('Rentals by Telegram').uncheck()
    await page.getByRole('button', { name: 'Save the rules and quiet hours' }).click()
    await page.getByText('Saved.').waitFor({ timeout: WAIT })
    await page.reload({ timeout: WAIT })
    await page.getByLabel('From', { exact: true }).waitFor({ timeout: WAIT })
    expect(await page.getByLabel('Hold non-critical notifications during quiet hours').isChecked()).toBe(true)
    expect(await page.getByLabel('From', { exact: true }).inputValue()).toBe('22:00')
    expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe('07:00')
    expect(await page.getByLabel('Rentals by Telegram').isChecked()).toBe(false)
    // Email is for critical categories only: the non-critical ones cannot be ticked.
    expect(await page.getByLabel('Rentals by email').isDisabled()).toBe(true)
    const settings = (await (await c.app.fetch('/api/v1/notifications/settings', { headers: owner.headers })).json()) as { quiet_hours: unknown }
    expect(settings.quiet_hours).toEqual({ enabled: true, from: '22:00', to: '07:00' })
    await expectAccessible(c, 'notifications-2-quiet-window')
  }, 120_000)

  test('the account email becomes a channel, and a test notification shows in the history', async () => {
    const { page } = c
    await page.getByRole('button', { name: /Use my account email/ }).click()
    await page.locator('#ch-email + p .badge', { hasText: 'connected' }).waitFor({ timeout: WAIT })
    await page.getByRole('button', { name: 'Send a test notification' }).click()
    await page.locator('section', { hasText: 'History' }).getByText('email:').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'notifications-3-history')
  }, 120_000)
})

describe('tokens', () => {
  test('a new token is shown once, works, and stops working once revoked', async () => {
    const { page } = c
    await open(c, '/tokens', 'Tokens')
    await page.getByText('No tokens.').waitFor({ timeout: WAIT })
    await page.getByLabel('Name', { exact: true }).fill('grafana')
    await page.getByLabel('commands:read').check()
    await page.getByRole('button', { name: 'Create the token' }).click()
    const shown = page.getByTestId('new-token')
    await shown.waitFor({ timeout: WAIT })
    const token = (await shown.textContent())!.trim()
    expect(token).toMatch(/^gpuhq_pat_/)
    await page.locator('tr[data-token="grafana"]').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'tokens-1-created')
    expect((await c.app.fetch('/api/v1/servers', { headers: { authorization: `Bearer ${token}` } })).status).toBe(200)

    await page.reload({ timeout: WAIT })
    await page.locator('tr[data-token="grafana"]').waitFor({ timeout: WAIT })
    expect(await page.content()).not.toContain(token)
    await page.getByRole('button', { name: 'Revoke grafana' }).click()
    await page.getByText('No tokens.').waitFor({ timeout: WAIT })
    expect((await c.app.fetch('/api/v1/servers', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)
  }, 120_000)
})

describe('alerts', () => {
  test('a server going offline opens an incident on the page, which is acknowledged and then resolved with a note', async () => {
    const { page } = c
    await open(c, '/alerts', 'Alerts')
    await page.getByText('Nothing needs attention').waitFor({ timeout: WAIT })
    const enrolled = await enrolAgent(c.app, owner, { hostname: 'rig-alert' })
    const { agent } = await RawAgent.start(c.app, enrolled.agent_token)
    agent.heartbeat()
    await c.app.deps.durable.barrier()
    agent.ws.close()
    await agent.closed
    const row = page.locator('tr', { hasText: 'offline' }).first()
    await row.locator('.badge', { hasText: 'open' }).waitFor({ timeout: WAIT })
    await expectAccessible(c, 'alerts-1-open')
    await row.getByRole('button', { name: 'Acknowledge' }).click()
    await row.locator('.badge', { hasText: 'acknowledged' }).waitFor({ timeout: WAIT })
    await row.locator('summary').click()
    await row.getByLabel('Note (optional)').fill('fans replaced')
    await row.getByRole('button', { name: 'Resolve' }).click()
    await page.getByText('Nothing needs attention').waitFor({ timeout: WAIT })
    await page.getByLabel('Show').selectOption('resolved')
    await page.getByText('Resolved: fans replaced').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'alerts-2-resolved')
  }, 120_000)
})

describe('AI access and strategy', () => {
  test('switching AI access on shows its token once, with the tools it may call', async () => {
    const { page } = c
    await open(c, '/ai', 'AI access')
    await page.getByText('No AI assistant can reach this account.').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'ai-1-off')
    await page.getByRole('button', { name: 'Switch on with these tools' }).click()
    const token = page.getByTestId('mcp-token')
    await token.waitFor({ timeout: WAIT })
    expect(await token.textContent()).toMatch(/^gpuhq_mcp_/)
    await page.locator('.badge', { hasText: 'on' }).first().waitFor({ timeout: WAIT })
    await expectAccessible(c, 'ai-2-on')
  }, 120_000)

  test('a pricing policy is previewed and created', async () => {
    const { page } = c
    await open(c, '/strategy', 'Strategy')
    await page.getByText('No pricing policy yet.').waitFor({ timeout: WAIT })
    await page.getByLabel('Name', { exact: true }).fill('4090s at the median')
    await page.getByLabel('GPU model').fill('rtx_4090')
    await page.getByRole('button', { name: 'Preview the prices' }).click()
    await page.getByText('Nothing to price now').waitFor({ timeout: WAIT })
    await page.getByRole('button', { name: 'Create the policy' }).click()
    await page.getByRole('cell', { name: '4090s at the median', exact: true }).waitFor({ timeout: WAIT })
    await expectAccessible(c, 'strategy-1-policy')
  }, 120_000)

  test('loaded nothing from outside the service, logged no error and broke no policy', () => {
    expectClean(c)
  })
})

describe('watchdog', () => {
  test('the default rules are listed off on Settings, one is turned on, and a ladder under way shows its next step', async () => {
    const { page } = c
    await open(c, '/settings', 'Settings')
    const section = page.locator('section', { hasText: 'Watchdog' })
    await section.getByRole('button', { name: 'Turn on Xid 79: GPU fallen off the bus' }).waitFor({ timeout: WAIT })
    expect(await section.getByText('off', { exact: true }).count()).toBe(3)
    await section.getByRole('button', { name: 'Turn on Xid 79: GPU fallen off the bus' }).click()
    await section.getByRole('button', { name: 'Turn off Xid 79: GPU fallen off the bus' }).waitFor({ timeout: WAIT })
    const rules = (await (await c.app.fetch('/api/v1/watchdog/rules', { headers: owner.headers })).json()) as { items: { preset: string; enabled: boolean }[] }
    expect(rules.items.find((r) => r.preset === 'xid_79')?.enabled).toBe(true)

    // A server logs Xid 79: the next evaluation notifies, and the page shows the ladder's next step.
    const e = await enrolAgent(c.app, owner)
    const { agent } = await RawAgent.start(c.app, e.agent_token)
    agent.heartbeat()
    await c.app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: 1 } })
    agent.event('gpu.xid', 'critical', 'NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.', { xid: 79, gpu_index: 0 })
    await agent.barrier()
    expect((await c.app.fetch('/api/v1/_test/jobs/watchdog.evaluate/run', { method: 'POST' })).status).toBe(200)
    await page.reload({ timeout: WAIT })
    await section.getByText('next: reboot').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'settings-watchdog')
    await expectClean(c)
    await agent.close()
  }, 120_000)
})
