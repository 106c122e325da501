import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { DomainError, invalidField } from '../../platform/domain-error'
import { formatMoney, parseMoneyInRange } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { serversOfTenant, setKeepOn } from '../fleet'
import { findGroup } from '../groups'
import { checkOffer, linkedMachines, type MarketplaceId, publishOffer, setIdleJob, setRollingEndDate } from '../marketplaces'
import { ListingProfileErrors } from './listing-profiles.errors'
import type { ApplyResult, ProfileCreate, ProfilePatch } from './listing-profiles.model'
import {
  deleteProfileRow,
  findProfile,
  insertProfile,
  MAX_PROFILES,
  type ProfileRow,
  profileOfGroup,
  profilesOf,
  updateProfile,
} from './listing-profiles.repository'

/**
 * Group listing profiles (docs/marketplaces.md "Listing profiles"): what every member server's link
 * on one marketplace should carry (offer, rolling end date, idle job, keep-on). Applying a profile
 * sets each member's link through the marketplaces verbs, one server after another, each with its
 * own outcome. A server that joins the group later gets the profile when it is applied next: the
 * platform writes change what renters pay, so gpuhq sends them only when the owner asks.
 */

type Ctx = { deps: Deps; actor: Actor; audit: AuditContext }
type Settings = Static<typeof ProfilePatch>
type Result = Static<typeof ApplyResult>

function profileView(p: ProfileRow) {
  return {
    id: p.id,
    name: p.name,
    group_id: p.groupId,
    marketplace: p.marketplace,
    offer: p.offer ?? null,
    end_date_days: p.endDateDays ?? null,
    idle_job: p.idleJob ?? null,
    keep_on: p.keepOn ?? null,
    version: p.version,
    created_at: formatTimestamp(p.createdAt),
    updated_at: formatTimestamp(p.updatedAt),
    applied_at: formatNullableTimestamp(p.appliedAt),
  }
}

/** 422 with the pointer under `prefix` (an offer's own checks speak of its fields at the top). */
function under(prefix: string, fn: () => void): void {
  try {
    fn()
  } catch (e) {
    if (!(e instanceof DomainError) || !e.facts.fields) throw e
    throw new DomainError(e.code, e.problem, e.message, { ...e.facts, fields: e.facts.fields.map((f) => ({ ...f, path: `${prefix}${f.path}` })) })
  }
}

/** Refuses what the marketplace has no place for and values out of range, before anything is stored. */
function checkSettings(deps: Deps, marketplace: MarketplaceId, s: Settings): void {
  if (s.offer) {
    const offer = s.offer
    under('/offer', () => checkOffer(marketplace, offer, deps.clock.nowUs()))
  }
  if (marketplace !== 'marketplace_a') {
    for (const field of ['end_date_days', 'idle_job'] as const)
      if (s[field] !== undefined && s[field] !== null)
        throw invalidField(
          'listing_profiles',
          `/${field}`,
          'not_supported_by_marketplace',
          field === 'end_date_days'
            ? `${marketplace} has no listing end date`
            : `${marketplace}'s API documents no call that sets a background job (docs/marketplaces.md "Idle jobs")`,
        )
  }
  if (s.idle_job) {
    const prices = [
      ['price_gpu_hour', s.idle_job.price_gpu_hour, true],
      ['price_inet_up_tb', s.idle_job.price_inet_up_tb, false],
      ['price_inet_down_tb', s.idle_job.price_inet_down_tb, false],
    ] as const
    for (const [field, value, aboveZero] of prices) {
      if (value === undefined || value === null) continue
      const micros = parseMoneyInRange(value)
      if (micros === null) throw invalidField('listing_profiles', `/idle_job/${field}`, 'too_large', `${field} is out of range`)
      if (micros < 0 || (aboveZero && micros === 0))
        throw invalidField('listing_profiles', `/idle_job/${field}`, 'too_small', aboveZero ? `${field} must be above zero` : `${field} cannot be negative`)
    }
  }
}

/** The stored form of the settings given (undefined: not given). */
function stored(s: Settings): Partial<Pick<ProfileRow, 'offer' | 'endDateDays' | 'idleJob' | 'keepOn'>> {
  const out: Partial<Pick<ProfileRow, 'offer' | 'endDateDays' | 'idleJob' | 'keepOn'>> = {}
  if (s.offer !== undefined) out.offer = s.offer
  if (s.end_date_days !== undefined) out.endDateDays = s.end_date_days
  if (s.idle_job !== undefined)
    out.idleJob =
      s.idle_job === null
        ? null
        : {
            image: s.idle_job.image,
            args: s.idle_job.args ?? '',
            price_gpu_hour: formatMoney(parseMoneyInRange(s.idle_job.price_gpu_hour)!),
            price_inet_up_tb: s.idle_job.price_inet_up_tb ? formatMoney(parseMoneyInRange(s.idle_job.price_inet_up_tb)!) : null,
            price_inet_down_tb: s.idle_job.price_inet_down_tb ? formatMoney(parseMoneyInRange(s.idle_job.price_inet_down_tb)!) : null,
          }
  if (s.keep_on !== undefined) out.keepOn = s.keep_on
  return out
}

function load(deps: Deps, actor: Actor, id: string): ProfileRow {
  const p = findProfile(deps.db, actor.tenantId, id.toLowerCase())
  if (!p) throw ListingProfileErrors.notFound()
  return p
}

export function listProfiles({ deps, actor }: Ctx) {
  return { items: profilesOf(deps.db, actor.tenantId).map(profileView) }
}

export function getProfile({ deps, actor, id }: Ctx & { id: string }) {
  return profileView(load(deps, actor, id))
}

export function createProfile({ deps, actor, audit, input }: Ctx & { input: Static<typeof ProfileCreate> }) {
  const group = findGroup(deps.db, actor.tenantId, input.group_id.toLowerCase())
  if (!group) throw ListingProfileErrors.groupNotFound(undefined, { fields: [{ path: '/group_id', code: 'not_found' }] })
  checkSettings(deps, input.marketplace, input)
  return withTransaction(deps.db, (tx) => {
    if (profileOfGroup(tx, actor.tenantId, group.id, input.marketplace)) throw ListingProfileErrors.taken()
    if (profilesOf(tx, actor.tenantId).length >= MAX_PROFILES) throw ListingProfileErrors.taken(`at most ${MAX_PROFILES} listing profiles`)
    const now = deps.clock.nowUs()
    const row: ProfileRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      groupId: group.id,
      marketplace: input.marketplace,
      name: input.name,
      offer: null,
      endDateDays: null,
      idleJob: null,
      keepOn: null,
      ...stored(input),
      version: 1,
      createdAt: now,
      updatedAt: now,
      appliedAt: null,
    }
    insertProfile(tx, row)
    recordAudit(tx, deps, audit, { operation: 'listing_profiles.create', targetKind: 'listing_profile', targetId: row.id })
    return profileView(row)
  })
}

export function updateListingProfile({ deps, actor, audit, id, input }: Ctx & { id: string; input: Settings }) {
  const p = load(deps, actor, id)
  checkSettings(deps, p.marketplace, input)
  return withTransaction(deps.db, (tx) => {
    const patch = { ...stored(input), ...(input.name !== undefined ? { name: input.name } : {}), version: p.version + 1, updatedAt: deps.clock.nowUs() }
    updateProfile(tx, actor.tenantId, p.id, patch)
    recordAudit(tx, deps, audit, { operation: 'listing_profiles.update', targetKind: 'listing_profile', targetId: p.id })
    return profileView({ ...p, ...patch })
  })
}

export function deleteProfile({ deps, actor, audit, id }: Ctx & { id: string }): void {
  const p = load(deps, actor, id)
  withTransaction(deps.db, (tx) => {
    deleteProfileRow(tx, actor.tenantId, p.id)
    recordAudit(tx, deps, audit, { operation: 'listing_profiles.delete', targetKind: 'listing_profile', targetId: p.id })
  })
}

/**
 * Applies the profile to every managed server of its group, by name: the offer (published, logged
 * with the profile's name as the reason), the rolling end date, the idle job, keep-on, in that order.
 * A server without a link on the profile's marketplace is skipped; a refused step stops that
 * server's steps (its reason kept) and the next server goes on. Nothing is undone: what was done is
 * on the link, and applying again repeats only what the profile says.
 */
export async function applyProfile(ctx: Ctx & { id: string }) {
  const { deps, actor, audit } = ctx
  const p = load(deps, actor, ctx.id)
  const members = serversOfTenant(deps.db, actor.tenantId).filter((s) => s.groupId === p.groupId && s.decommissionedAt === null)
  const linked = new Set(
    linkedMachines(deps.db, actor.tenantId)
      .filter((l) => l.marketplace === p.marketplace)
      .map((l) => l.serverId),
  )
  const results: Result[] = []
  for (const server of members) {
    const steps: Result['steps'] = []
    if (!linked.has(server.id)) {
      results.push({ server_id: server.id, server_name: server.name, outcome: 'skipped', steps, reason: `no link on ${p.marketplace}` })
      continue
    }
    const target = { deps, actor, audit, serverId: server.id, marketplace: p.marketplace }
    try {
      if (p.offer) {
        await publishOffer({ ...target, input: p.offer as Parameters<typeof publishOffer>[0]['input'], reason: `listing profile "${p.name}"` })
        steps.push('offer')
      }
      if (p.endDateDays !== null) {
        setRollingEndDate({ ...target, input: { days: p.endDateDays } })
        steps.push('end_date')
      }
      if (p.idleJob) {
        await setIdleJob({ ...target, input: p.idleJob })
        steps.push('idle_job')
      }
      if (p.keepOn !== null) {
        setKeepOn({ deps, actor, audit, id: server.id, marketplace: p.marketplace, on: p.keepOn })
        steps.push('keep_on')
      }
      results.push({ server_id: server.id, server_name: server.name, outcome: 'done', steps, reason: null })
    } catch (e) {
      if (!(e instanceof DomainError)) throw e
      results.push({ server_id: server.id, server_name: server.name, outcome: 'refused', steps, reason: e.message.slice(0, 1024) })
    }
  }
  const applied = withTransaction(deps.db, (tx) => {
    const current = findProfile(tx, actor.tenantId, p.id) ?? p
    const at = deps.clock.nowUs()
    updateProfile(tx, actor.tenantId, p.id, { appliedAt: at })
    recordAudit(tx, deps, audit, { operation: 'listing_profiles.apply', targetKind: 'listing_profile', targetId: p.id })
    return { ...current, appliedAt: at }
  })
  return { profile: profileView(applied), results }
}
