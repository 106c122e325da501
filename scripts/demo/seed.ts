import { randomBytes } from 'node:crypto'
import { createAccount } from '../../src/modules/accounts'
import { ALL_SCOPES } from '../../src/platform/access'
import type { Deps } from '../../src/platform/context'
import type { DemoClient } from './client'
import { CLORE_KEY, DEMO_SERVERS, VAST_COMMISSION_PERCENT, VAST_KEY } from './plan'

/**
 * The demo's account, made through the service's public API wherever it has an operation: the
 * owner (the operator's `create-account`, then the password set over HTTP), sandbox top-ups paid on
 * the sandbox's own checkout, the upgrade to `pro`, a personal access token, groups, the servers'
 * names and tags, the cost basis, both marketplace accounts with links and offers, a pricing
 * policy, notification rules and quiet hours, and a command. Every call is what a member's browser
 * or script would send.
 */

const DEMO_EMAIL = 'demo@example.com'

/** A new password every start: the demo may listen on a network, and it prints the password anyway. */
function newPassword(): string {
  const chars = 'abcdefghjkmnpqrstuvwxyz23456789'
  const bytes = randomBytes(12)
  const groups = [0, 4, 8].map((i) => [...bytes.subarray(i, i + 4)].map((b) => chars[b % chars.length]).join(''))
  return `demo-${groups.join('-')}`
}

export type SignIn = { email: string; password: string }
export type Owner = SignIn & { tenantId: string; member: DemoClient }

/**
 * The demo owner's sign-in, chosen before the service starts: the service publishes it to the web
 * console (DEMO_EMAIL, DEMO_PASSWORD; docs/console.md "The demo"), which signs straight in.
 */
export const demoSignIn = (): SignIn => ({ email: DEMO_EMAIL, password: newPassword() })

/** The owner, signed in: created as the operator creates accounts, the password set with the one-time ticket. */
export async function createOwner(deps: Deps, api: DemoClient, { email, password }: SignIn): Promise<Owner> {
  const { tenantId, ticket } = await createAccount({ deps, input: { email, tenantName: 'Demo rigs' } })
  const res = await api.send('POST', '/auth/password-reset/complete', { ticket, password })
  const cookie = res.headers.get('set-cookie')?.split(';')[0]
  if (res.status !== 200 || !cookie) throw new Error(`setting the demo password answered ${res.status}: ${await res.text()}`)
  return { email, password, tenantId, member: api.as({ cookie }) }
}

/** A top-up paid (or left open) on the sandbox's checkout page, as the page's button does. */
async function topUp(member: DemoClient, amount: string, method: string, pay: boolean): Promise<void> {
  const topup = await member.call<{ id: string; checkout_url: string }>('POST', '/billing/topups', { amount_usd: amount, payment_method: method }, 201)
  if (!pay) return
  await member.call('POST', new URL(topup.checkout_url).pathname, { outcome: 'finished' })
  const read = await member.get<{ status: string }>(`/billing/topups/${topup.id}`)
  if (read.status !== 'succeeded') throw new Error(`the sandbox top-up of ${amount} ended ${read.status}`)
}

/** The plan: `pro` (strategy and AI access), ordered as an owner orders it (the opening balance covers it: no servers yet). */
export async function upgradeToPro(member: DemoClient): Promise<void> {
  await member.call('POST', '/subscription/changes', { target_plan: 'pro' })
}

/**
 * Today's top-ups through the sandbox, paid on its checkout as the page's button does, made after
 * the week's charges are booked so each ledger entry's balance after follows the one before it.
 */
export async function fundAccount(member: DemoClient): Promise<void> {
  await topUp(member, '100.00', 'card', true)
  await topUp(member, '50.00', 'usdt_tron', true)
  await topUp(member, '25.00', 'card', false) // left open: pay it yourself on its checkout page
}

/** The personal access token the demo prints: every scope an owner can give. */
export async function mintToken(member: DemoClient): Promise<string> {
  const pat = await member.call<{ token: string }>('POST', '/tokens', { name: 'demo (every scope)', scopes: ALL_SCOPES }, 201)
  return pat.token
}

/** Groups, names, tags and tariffs of the enrolled servers. */
export async function arrangeFleet(api: DemoClient, ids: Map<string, string>): Promise<void> {
  const groups = new Map<string, string>()
  for (const name of new Set(DEMO_SERVERS.map((s) => s.group))) groups.set(name, (await api.call<{ id: string }>('POST', '/groups', { name }, 201)).id)
  for (const s of DEMO_SERVERS)
    await api.call('PATCH', `/servers/${ids.get(s.name)}`, {
      group_id: groups.get(s.group),
      tags: s.tags,
      ...(s.electricity ? { electricity_usd_per_kwh: s.electricity } : {}),
    })
}

/** Both marketplace accounts, a link from each listed server to its machine, and the offers published through gpuhq. */
export async function connectMarketplaces(api: DemoClient, ids: Map<string, string>): Promise<Map<string, string>> {
  await api.call('PUT', '/billing/cost-basis', {
    electricity_usd_per_kwh: '0.145',
    operational: { usd_per_month: '300' },
    marketplaces: { marketplace_a: { commission_percent: String(VAST_COMMISSION_PERCENT) }, marketplace_b: { commission_percent: '5' } },
  })
  await api.call('PUT', '/marketplaces/marketplace_a', { api_key: VAST_KEY })
  await api.call('PUT', '/marketplaces/marketplace_b', { api_key: CLORE_KEY })
  const linkedAt = new Map<string, string>()
  for (const s of DEMO_SERVERS) {
    const l = s.listing
    if (!l) continue
    const server = ids.get(s.name)!
    const external = String(l.marketplace === 'marketplace_a' ? l.machineId : l.id)
    const link = await api.call<{ linked_at: string }>(
      'POST',
      '/marketplaces/links',
      { server_id: server, marketplace: l.marketplace, external_machine_id: external },
      201,
    )
    linkedAt.set(server, link.linked_at)
    const offer =
      l.marketplace === 'marketplace_a'
        ? {
            price_gpu_hour: String(l.priceGpuHour),
            min_bid_hour: String(l.minBidHour),
            price_storage_gb_month: '0.15',
            price_inet_up_tb: '2',
            price_inet_down_tb: '2',
            min_gpu_count: 1,
          }
        : { coin_prices: Object.fromEntries(Object.entries(l.pricing).map(([coin, day]) => [coin, { on_demand: String(day) }])), max_rental_hours: 96 }
    await api.call('PUT', `/marketplaces/links/${server}/${l.marketplace}/offer`, offer)
  }
  return linkedAt
}

/** A pricing policy whose first run suggests new prices for the RTX 4090s, a listing profile, and the owner's notification settings. */
export async function configureAccount(api: DemoClient, ids: Map<string, string>): Promise<void> {
  await api.call(
    'POST',
    '/strategy/policies',
    {
      name: 'RTX 4090s at the upper quartile',
      marketplace: 'marketplace_a',
      target: { gpu_model: 'rtx_4090' },
      min_margin_percent: '20',
      target_percentile: 75,
      ceiling_gpu_hour: '0.70',
      rounding_step: '0.01',
      cadence_minutes: 60,
      raise_while_rented: 'allow',
    },
    201,
  )
  await api.call('POST', '/notifications/email/connect', {})
  await api.call('PUT', '/notifications/settings', {
    rules: { rental: { chat: true, email: false }, price: { chat: false, email: false }, weekly: { chat: true, email: false } },
    quiet_hours: { enabled: true, from: '22:00', to: '07:00' },
  })
  // A listing profile for the Frankfurt servers on marketplace_a, not applied yet: end dates kept a
  // month ahead and keep-on (docs/marketplaces.md "Listing profiles"). No offer: the policy above prices them.
  const frankfurt = (await api.get<{ items: { id: string; name: string }[] }>('/groups')).items.find((g) => g.name === 'Frankfurt')
  if (frankfurt)
    await api.call(
      'POST',
      '/listing-profiles',
      { name: 'Frankfurt on Vast', group_id: frankfurt.id, marketplace: 'marketplace_a', end_date_days: 30, keep_on: true },
      201,
    )
  // One command already done: a power limit on rig-03's cards.
  await api.call('POST', '/commands', { server_id: ids.get('rig-03'), type: 'gpu.set_power_limit', params: { gpu_index: null, watts: 300 } }, 201)
}
