import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../../db/client'
import type { Actor } from '../../../platform/access'
import type { Deps } from '../../../platform/context'
import { DomainError, invalidField } from '../../../platform/domain-error'
import { formatMoney, MAX_MONEY_MICROS, parseMoneyInRange } from '../../../platform/money'
import { formatTimestamp, parseTimestamp } from '../../../platform/time'
import { recordAudit, type AuditContext } from '../../audit'
import { recordServerEvent } from '../../fleet'
import type { AccountRow } from '../accounts/marketplaces.repository'
import type { MarketplaceId, RemoteMachine } from '../adapters/marketplaces.adapter'
import { adapterFor } from '../adapters/marketplaces.registry'
import { findLink, linksOfAccount, updateLink, type LinkRow } from '../links/links.repository'
import { linkView } from '../links/links.service'
import { MarketplaceErrors } from '../marketplaces.errors'
import type { OfferInput } from '../offers/offers.mapping'
import { usd } from '../offers/offers.mapping'
import { offerWriteOf, refOf, writable, write } from '../offers/offers.service'
import { systemActor } from '../operations/operations.service'
import type { IdleJobBody, RollingEndDateBody } from './listing.model'

/**
 * A link's listing settings (docs/marketplaces.md "Rolling end dates", "Idle jobs"): the rolling
 * end date the sync keeps ahead, and the idle job (Vast's default job) set on the machine. Both are
 * marketplace_a's: marketplace_b has no listing end date and its API sets no background job.
 */

type Target = { deps: Deps; actor: Actor; audit: AuditContext; serverId: string; marketplace: MarketplaceId }

const DAY_US = 86_400 * 1_000_000
/** Vast warns a host "listing ending soon" this many days before the end date (host-operations.md, pain 9). */
const WARNING_DAYS = 7
/** How far past the horizon one extension reaches: one platform call a week per machine keeps a listing ahead. */
const STEP_DAYS = 7

/** Refuses marketplace_b for a setting its API has no place for, saying why and what to do instead. */
function onlyMarketplaceA(marketplace: MarketplaceId, what: 'end_date' | 'idle_job'): void {
  if (marketplace === 'marketplace_a') return
  throw MarketplaceErrors.notSupported(
    '',
    what === 'end_date'
      ? 'marketplace_b has no listing end date: an offer stays listed until it is withdrawn (its nearest setting, max_rental_hours, caps one rental, not the listing)'
      : "marketplace_b's API documents no call that sets a background job (server_config only shows one): set it in Clore's web console",
  )
}

/** PUT …/rolling-end-date: from the next sync on, the offer's end date is kept at least `days` ahead. Nothing is sent now. */
export async function setRollingEndDate({ deps, actor, audit, serverId, marketplace, input }: Target & { input: Static<typeof RollingEndDateBody> }) {
  onlyMarketplaceA(marketplace, 'end_date')
  const { link } = await writable(deps, actor, serverId, marketplace)
  return withTransaction(deps.db, async (tx) => {
    const current = (await findLink(tx, actor.tenantId, link.serverId, marketplace)) ?? link
    // A new horizon starts afresh: what gpuhq extended to for the old one no longer stands in for the listing.
    const changed = current.endDateDays !== input.days
    const next: LinkRow = {
      ...current,
      endDateDays: input.days,
      ...(changed ? { endDateExtendedTo: null, endDateExtendedAt: null } : {}),
    }
    await updateLink(tx, current.id, { endDateDays: next.endDateDays, endDateExtendedTo: next.endDateExtendedTo, endDateExtendedAt: next.endDateExtendedAt })
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.rolling_end_date.set', targetKind: 'server', targetId: link.serverId })
    return { link: linkView(next) }
  })
}

export async function clearRollingEndDate({ deps, actor, audit, serverId, marketplace }: Target): Promise<void> {
  const link = await findLink(deps.db, actor.tenantId, serverId.toLowerCase(), marketplace)
  if (!link) throw MarketplaceErrors.linkNotFound()
  await withTransaction(deps.db, async (tx) => {
    await updateLink(tx, link.id, { endDateDays: null, endDateExtendedTo: null, endDateExtendedAt: null })
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.rolling_end_date.clear', targetKind: 'server', targetId: link.serverId })
  })
}

/** Money text of an idle job's price, in range; 422 at its pointer otherwise. */
function price(value: string | null | undefined, path: string, aboveZero: boolean): number | null {
  if (value === undefined || value === null) return null
  const micros = parseMoneyInRange(value)
  if (micros === null) throw invalidField('marketplaces', path, 'too_large', `${path.slice(1)} is at most ${formatMoney(MAX_MONEY_MICROS)}`)
  if (micros < 0 || (aboveZero && micros === 0))
    throw invalidField('marketplaces', path, 'too_small', aboveZero ? `${path.slice(1)} must be above zero` : `${path.slice(1)} cannot be negative`)
  return micros
}

/** PUT …/idle-job: Vast's `create_bids` with the image, its arguments and the price; shown on the link once Vast accepted it. */
export async function setIdleJob({ deps, actor, audit, serverId, marketplace, input }: Target & { input: Static<typeof IdleJobBody> }) {
  onlyMarketplaceA(marketplace, 'idle_job')
  const api = adapterFor(deps, marketplace).idleJob
  if (!api) throw MarketplaceErrors.notSupported('', `${marketplace} sets no idle job`)
  const gpu = price(input.price_gpu_hour, '/price_gpu_hour', true)!
  const up = price(input.price_inet_up_tb, '/price_inet_up_tb', false)
  const down = price(input.price_inet_down_tb, '/price_inet_down_tb', false)
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  const job = {
    image: input.image,
    args: input.args ?? '',
    priceGpu: usd(gpu),
    priceInetu: up === null ? null : usd(up, 1000),
    priceInetd: down === null ? null : usd(down, 1000),
  }
  await write(deps, actor, account, link, (key) => api.set(key, refOf(link), job))
  return withTransaction(deps.db, async (tx) => {
    const current = (await findLink(tx, actor.tenantId, link.serverId, marketplace)) ?? link
    const idleJob = {
      image: job.image,
      args: job.args,
      price_gpu_hour: formatMoney(gpu),
      price_inet_up_tb: up === null ? null : formatMoney(up),
      price_inet_down_tb: down === null ? null : formatMoney(down),
      set_at: deps.clock.nowUs(),
    }
    await updateLink(tx, current.id, { idleJob })
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.idle_job.set', targetKind: 'server', targetId: link.serverId })
    return { link: linkView({ ...current, idleJob }) }
  })
}

/** DELETE …/idle-job: Vast's `DELETE /machines/{id}/defjob/`, then the link shows none. */
export async function removeIdleJob({ deps, actor, audit, serverId, marketplace }: Target): Promise<void> {
  onlyMarketplaceA(marketplace, 'idle_job')
  const api = adapterFor(deps, marketplace).idleJob
  if (!api) throw MarketplaceErrors.notSupported('', `${marketplace} sets no idle job`)
  const { link, account } = await writable(deps, actor, serverId, marketplace)
  await write(deps, actor, account, link, (key) => api.remove(key, refOf(link)))
  await withTransaction(deps.db, async (tx) => {
    const current = await findLink(tx, actor.tenantId, link.serverId, marketplace)
    if (current) await updateLink(tx, current.id, { idleJob: null })
    await recordAudit(tx, deps, audit, { operation: 'marketplaces.idle_job.remove', targetKind: 'server', targetId: link.serverId })
  })
}

/**
 * The end date a link's offer has now: the platform's, unless gpuhq extended it since the platform
 * was last read (then the later of the two), so a listing not yet re-read is never extended twice.
 */
function currentEnd(link: LinkRow): number | null {
  const platform = link.remote.end_date === null ? null : parseTimestamp(link.remote.end_date)
  const ours = link.endDateExtendedTo
  if (ours === null || ours === undefined) return platform
  if (link.lastSeenAt !== null && link.endDateExtendedAt !== null && link.lastSeenAt > link.endDateExtendedAt) return platform
  return Math.max(platform ?? 0, ours)
}

/** The next UTC midnight at or after `us`: an extension ends on a whole day. */
const dayEnd = (us: number) => Math.ceil(us / DAY_US) * DAY_US

/**
 * Which of an account's links the rolling end date extends now, and to when: a listed
 * marketplace_a offer with a known price (listed, or kept from gpuhq's last publication), whose end date is unknown or less than `end_date_days` ahead.
 * It is set to `end_date_days` + one week ahead (to a whole UTC day), so the next extension comes a
 * week later, and always before Vast's seven-day warning (the horizon is at least eight days).
 */
export function endDatesDue(deps: Deps, links: LinkRow[], machines: Map<string, RemoteMachine>): { link: LinkRow; from: number | null; to: number }[] {
  const now = deps.clock.nowUs()
  const due: { link: LinkRow; from: number | null; to: number }[] = []
  for (const link of links) {
    if (link.marketplace !== 'marketplace_a' || link.endDateDays === null || link.state !== 'linked') continue
    const machine = machines.get(link.externalMachineId)
    if (machine?.remote.listed !== true) continue
    // Nothing listed at a known price: create_asks needs one, and gpuhq does not invent it.
    if (machine.remote.price_gpu_hour === null && typeof link.offer?.price_gpu_hour !== 'string') continue
    const end = currentEnd(link)
    if (end !== null && end >= now + link.endDateDays * DAY_US) continue
    const to = dayEnd(now + (link.endDateDays + STEP_DAYS) * DAY_US)
    // Already sent: a platform that still shows the old date is not sent the same horizon again.
    if (link.endDateExtendedTo === to) continue
    due.push({ link, from: end, to })
  }
  return due
}

/**
 * Extends one link's end date (the sync, after it refreshed the links): Vast's create_asks with the
 * offer as listed now and the new end_date, logged in the operations log under the server with the
 * reason; then the link keeps the end date it set, and the server's events say so. Answers whether
 * the platform took it; a refusal or an outage waits for the next sync.
 */
export async function extendEndDate(deps: Deps, account: AccountRow, due: { link: LinkRow; from: number | null; to: number }): Promise<boolean> {
  const { link, from, to } = due
  const remote = link.remote
  const kept = (link.offer ?? {}) as OfferInput
  const input: OfferInput = {
    price_gpu_hour: remote.price_gpu_hour ?? kept.price_gpu_hour,
    ...(remote.min_bid_hour !== null ? { min_bid_hour: remote.min_bid_hour } : {}),
    end_date: formatTimestamp(to),
  }
  if (input.price_gpu_hour === undefined) return false // nothing listed to extend at a known price
  const reason = `rolling end date: ${from === null ? 'no end date' : formatTimestamp(from)} → ${formatTimestamp(to)} (kept at least ${link.endDateDays} days ahead, before the ${WARNING_DAYS}-day "listing ending soon" warning)`
  try {
    const offer = offerWriteOf(link, input)
    await write(deps, systemActor(account.tenantId), account, link, (key) => adapterFor(deps, account.marketplace).publishOffer(key, offer), reason)
  } catch (error) {
    if (error instanceof DomainError) return false
    throw error
  }
  await withTransaction(deps.db, async (tx) => {
    const current = (await linksOfAccount(tx, account.id)).find((l) => l.id === link.id)
    if (!current) return
    const now = deps.clock.nowUs()
    await updateLink(tx, current.id, {
      endDateExtendedTo: to,
      endDateExtendedAt: now,
      remote: { ...current.remote, end_date: formatTimestamp(to), ask_duration_seconds: null },
      // The kept offer follows, so keep-on never re-publishes the old end date.
      ...(current.offer ? { offer: { ...current.offer, end_date: formatTimestamp(to) } } : {}),
    })
    await recordServerEvent(
      tx,
      deps,
      { id: current.serverId, tenantId: account.tenantId },
      {
        kind: 'marketplace.end_date_extended',
        message: `rolling end date: ${account.marketplace} listing now ends ${formatTimestamp(to)}`,
        data: { marketplace: account.marketplace, from: from === null ? null : formatTimestamp(from), to: formatTimestamp(to), days: current.endDateDays },
      },
    )
  })
  return true
}
