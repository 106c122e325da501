import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startMarketplaceA, type MarketplaceASim } from '../../scripts/sim/marketplace-a'
import { api, enrolAgent, eventually, ok, type Owner } from '../support/fleet'
import { expectAccessible, expectClean, open, signedInOwner, startConsole, WAIT, type ConsoleSession } from '../support/browser'

/**
 * Listing profiles in the console (docs/marketplaces.md "Listing profiles") against the local
 * simulator of marketplace_a: a profile made for a group on the Fleet page, applied there with each
 * server's outcome, and seen on a member's link in its server page (end date kept ahead, idle job).
 */

const KEY = 'vast-profiles-console-key-0123456789'
let sim: MarketplaceASim
let c: ConsoleSession
let owner: Owner
let member: string
let outsider: string

beforeAll(async () => {
  sim = await startMarketplaceA({ rateScale: 0, owners: [{ id: 4343, email: 'host@example.com', keys: [{ key: KEY, label: 'console' }] }] })
  c = await startConsole({ MARKETPLACE_A_API_URL: sim.url })
  owner = await signedInOwner(c, 'pro')
  const nowS = Math.floor(Date.now() / 1000)
  sim.putMachine(4343, 601, { hostname: 'rig-a', listed: true, num_gpus: 2, gpu_name: 'RTX 4090', listed_gpu_cost: 0.5, end_date: nowS + 60 * 86400 })
  member = (await enrolAgent(c.app, owner, { hostname: 'rig-a' })).server_id
  outsider = (await enrolAgent(c.app, owner, { hostname: 'rig-b' })).server_id
  await ok(await api(c.app, owner, 'PUT', '/marketplaces/marketplace_a', { json: { api_key: KEY } }))
  await ok(
    await api(c.app, owner, 'POST', '/marketplaces/links', { json: { server_id: member, marketplace: 'marketplace_a', external_machine_id: '601' } }),
    201,
  )
  const group = await ok(await api(c.app, owner, 'POST', '/groups', { json: { name: 'fra-4090' } }), 201)
  for (const id of [member, outsider]) await ok(await api(c.app, owner, 'PATCH', `/servers/${id}`, { json: { group_id: group.id } }))
}, 120_000)
afterAll(async () => {
  await c?.close()
  await sim?.stop()
})

describe('listing profiles', () => {
  test("a profile created for a group on the Fleet page is applied and shows on a member's link", async () => {
    const { page } = c
    await open(c, '/', 'Fleet')
    // The console was already on the Fleet page after signing in, before the group was made.
    await page.reload()
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Listing profiles' }) })
    await section.getByText('No listing profiles.').waitFor({ timeout: WAIT })
    const form = section.getByRole('form', { name: 'New listing profile' })
    await form.getByLabel('Profile name').fill('4090 standard')
    await form.getByLabel('Price, USD per GPU-hour', { exact: true }).fill('0.42')
    await form.getByLabel('Min bid, USD per GPU-hour').fill('0.30')
    await form.getByLabel('Min GPU chunk').fill('2')
    await form.getByLabel('Keep the end date this many days ahead').fill('30')
    await form.getByLabel('Idle job image').fill('host/idle:1')
    await form.getByLabel('Idle job price, USD per GPU-hour').fill('0.04')
    await form.getByRole('button', { name: 'Create the profile' }).click()
    const row = section.locator('tr', { hasText: '4090 standard' })
    await row.getByText('end date 30 days ahead').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'listing-profiles-1-created')

    await row.getByRole('button', { name: 'Apply' }).click()
    const status = section.getByRole('status', { name: 'Applied' })
    await status.getByText('1 done, 0 refused, 1 skipped').waitFor({ timeout: WAIT })
    expect(await status.textContent()).toContain('rig-b: skipped (no link on marketplace_a)')
    await row.getByText('1 done, 1 skipped').waitFor({ timeout: WAIT })
    await expectAccessible(c, 'listing-profiles-2-applied')
    // Vast got the offer and the default job.
    expect(
      sim
        .requests()
        .filter((r) => r.endpoint === 'create_bids')
        .map((r) => r.body),
    ).toEqual([{ machine: 601, price_gpu: 0.04, image: 'host/idle:1', args: '' }])

    await open(c, `/servers/${member}`, /.+/)
    const links = page.locator('section', { has: page.getByRole('heading', { name: 'Links and offers' }) })
    await links.getByText('kept 30 days ahead').waitFor({ timeout: WAIT })
    await links.getByText('host/idle:1 at 0.04 USD/GPU-h').waitFor({ timeout: WAIT })
    expectClean(c)
  }, 120_000)
})

describe("a link's listing settings on the Marketplaces page", () => {
  test('the rolling end date and the idle job are set from the link and shown on it', async () => {
    const { page } = c
    await open(c, '/marketplaces', 'Marketplaces')
    const row = page.locator('tr[data-link="marketplace_a:601"]')
    await row.locator('summary').click()
    await row.getByLabel('Days ahead (8 or more)').fill('45')
    await row.getByRole('button', { name: 'Keep it ahead' }).click()
    await eventually(async () => (await link()).listing.end_date_days === 45 || null)
    sim.clearRequests()
    // The list reloads after a change; open the link's actions again if that closed them.
    if ((await row.locator('details[open]').count()) === 0) await row.locator('summary').click()
    await row.getByLabel('Image').fill('host/idle:2')
    await row.getByLabel('Idle job USD per GPU-hour').fill('0.05')
    await row.getByRole('button', { name: 'Set the idle job' }).click()
    await eventually(async () => (await link()).listing.idle_job?.image === 'host/idle:2' || null)
    expect(
      sim
        .requests()
        .filter((r) => r.endpoint === 'create_bids')
        .map((r) => r.body),
    ).toEqual([{ machine: 601, price_gpu: 0.05, image: 'host/idle:2', args: '' }])
    await expectAccessible(c, 'listing-profiles-3-link-settings')
    expectClean(c)
  }, 120_000)
})

async function link(): Promise<{ listing: { end_date_days: number | null; idle_job: { image: string } | null } }> {
  const all = await ok<{ links: { server_id: string; listing: { end_date_days: number | null; idle_job: { image: string } | null } }[] }>(
    await api(c.app, owner, 'GET', '/marketplaces/links'),
  )
  return all.links.find((l) => l.server_id === member)!
}
