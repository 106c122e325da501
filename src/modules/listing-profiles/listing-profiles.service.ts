import { systemContext } from '../../platform/audit-context'
import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { DomainError, invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import { formatMoney, parseMoneyInRange } from '../../platform/money'
import { formatNullableTimestamp, formatTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import type { TenantWalk } from '../../platform/jobs'
import { serversOfTenant, setKeepOn } from '../fleet'
import { accountStateOf } from '../tenants'
import { findGroup } from '../groups'
import { checkOffer, linkedMachines, type MarketplaceId, publishOffer, setIdleJob, setRollingEndDate } from '../marketplaces'
import { ListingProfileErrors } from './listing-profiles.errors'
import type { ApplyResult, ProfileCreate, ProfilePatch } from './listing-profiles.model'
import {
  appliedProfiles,
  deleteProfileRow,
  findProfile,
  insertProfile,
  MAX_PROFILES,
  membersOf,
  type ProfileRow,
  profileOfGroup,
  profilesOf,
  updateProfile,
  upsertMember,
} from './listing-profiles.repository'

/**
 * Group listing profiles (docs/marketplaces.md "Listing profiles"): what every member server's link
 * on one marketplace should carry (offer, rolling end date, idle job, keep-on). Applying a profile
 * sets each member's link through the marketplaces verbs, one server after another, each with its
 * own outcome. A server that joins the group later gets it from the listing-profiles.apply job, once
 * the owner has applied the profile; a changed profile waits for the owner's next apply.
 */

type Ctx = { deps: Deps; actor: Actor; audit: AuditContext }
type Settings = Static<typeof ProfilePatch>
type Result = Static<typeof ApplyResult>

async function profileView(deps: Deps, p: ProfileRow) {
  const had = new Map((await membersOf(deps.db, p.tenantId, p.id)).map((m) => [m.serverId, m]))
  const members = (await membersOfGroup(deps, p.tenantId, p.groupId)).map((s) => {
    const m = had.get(s.id)
    return {
      server_id: s.id,
      server_name: s.name,
      outcome: m?.outcome ?? ('pending' as const),
      reason: m?.reason ?? null,
      applied_version: m?.version ?? null,
      applied_at: formatNullableTimestamp(m?.appliedAt ?? null),
    }
  })
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
    members,
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

async function load(deps: Deps, actor: Actor, id: string): Promise<ProfileRow> {
  const p = await findProfile(deps.db, actor.tenantId, id.toLowerCase())
  if (!p) throw ListingProfileErrors.notFound()
  return p
}

export async function listProfiles({ deps, actor }: Ctx) {
  const items = []
  for (const p of await profilesOf(deps.db, actor.tenantId)) items.push(await profileView(deps, p))
  return { items }
}

export async function getProfile({ deps, actor, id }: Ctx & { id: string }) {
  return await profileView(deps, await load(deps, actor, id))
}

export async function createProfile({ deps, actor, audit, input }: Ctx & { input: Static<typeof ProfileCreate> }) {
  const group = await findGroup(deps.db, actor.tenantId, input.group_id.toLowerCase())
  if (!group) throw ListingProfileErrors.groupNotFound(undefined, { fields: [{ path: '/group_id', code: 'not_found' }] })
  checkSettings(deps, input.marketplace, input)
  const created = await withTransaction(deps.db, async (tx) => {
    if (await profileOfGroup(tx, actor.tenantId, group.id, input.marketplace)) throw ListingProfileErrors.taken()
    if ((await profilesOf(tx, actor.tenantId)).length >= MAX_PROFILES) throw ListingProfileErrors.taken(`at most ${MAX_PROFILES} listing profiles`)
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
    await insertProfile(tx, row)
    await recordAudit(tx, deps, audit, { operation: 'listing_profiles.create', targetKind: 'listing_profile', targetId: row.id })
    return row
  })
  return await profileView(deps, created)
}

export async function updateListingProfile({ deps, actor, audit, id, ifMatch, input }: Ctx & { id: string; ifMatch: string | null; input: Settings }) {
  const p = await load(deps, actor, id)
  assertIfMatch(ifMatch, etagOf(p.version))
  checkSettings(deps, p.marketplace, input)
  const updated = await withTransaction(deps.db, async (tx) => {
    // Checked again inside the transaction: another change may have landed meanwhile.
    const current = await findProfile(tx, actor.tenantId, p.id)
    if (!current) throw ListingProfileErrors.notFound()
    assertIfMatch(ifMatch, etagOf(current.version))
    const patch = { ...stored(input), ...(input.name !== undefined ? { name: input.name } : {}), version: current.version + 1, updatedAt: deps.clock.nowUs() }
    await updateProfile(tx, actor.tenantId, p.id, patch)
    await recordAudit(tx, deps, audit, { operation: 'listing_profiles.update', targetKind: 'listing_profile', targetId: p.id })
    return { ...current, ...patch }
  })
  return await profileView(deps, updated)
}

export async function deleteProfile({ deps, actor, audit, id }: Ctx & { id: string }): Promise<void> {
  const p = await load(deps, actor, id)
  await withTransaction(deps.db, async (tx) => {
    await deleteProfileRow(tx, actor.tenantId, p.id)
    await recordAudit(tx, deps, audit, { operation: 'listing_profiles.delete', targetKind: 'listing_profile', targetId: p.id })
  })
}

type Member = { id: string; name: string }

/**
 * Applies the profile to the given members, one after another: the offer (published, logged with
 * the profile's name as the reason), the rolling end date, the idle job, keep-on, in that order. A
 * server without a link on the profile's marketplace is skipped; a refused step stops that server's
 * steps (its reason kept) and the next server goes on. Nothing is undone. Each outcome is recorded
 * against the profile's version, so the job knows who has had it.
 */
async function applyTo(deps: Deps, actor: Actor, audit: AuditContext, p: ProfileRow, members: Member[]): Promise<Result[]> {
  const linked = new Set((await linkedMachines(deps.db, actor.tenantId)).filter((l) => l.marketplace === p.marketplace).map((l) => l.serverId))
  const results: Result[] = []
  for (const server of members) {
    const steps: Result['steps'] = []
    let result: Result
    if (!linked.has(server.id)) result = { server_id: server.id, server_name: server.name, outcome: 'skipped', steps, reason: `no link on ${p.marketplace}` }
    else {
      const target = { deps, actor, audit, serverId: server.id, marketplace: p.marketplace }
      try {
        if (p.offer) {
          await publishOffer({ ...target, input: p.offer as Parameters<typeof publishOffer>[0]['input'], reason: `listing profile "${p.name}"` })
          steps.push('offer')
        }
        if (p.endDateDays !== null) {
          await setRollingEndDate({ ...target, input: { days: p.endDateDays } })
          steps.push('end_date')
        }
        if (p.idleJob) {
          await setIdleJob({ ...target, input: p.idleJob })
          steps.push('idle_job')
        }
        if (p.keepOn !== null) {
          await setKeepOn({ deps, actor, audit, id: server.id, marketplace: p.marketplace, on: p.keepOn })
          steps.push('keep_on')
        }
        result = { server_id: server.id, server_name: server.name, outcome: 'done', steps, reason: null }
      } catch (e) {
        if (!(e instanceof DomainError)) throw e
        result = { server_id: server.id, server_name: server.name, outcome: 'refused', steps, reason: e.message.slice(0, 1024) }
      }
    }
    results.push(result)
    await withTransaction(deps.db, async (tx) => {
      if (!(await findProfile(tx, actor.tenantId, p.id))) return // deleted meanwhile
      await upsertMember(tx, {
        profileId: p.id,
        serverId: server.id,
        tenantId: actor.tenantId,
        outcome: result.outcome,
        reason: result.reason,
        version: p.version,
        appliedAt: deps.clock.nowUs(),
      })
    })
  }
  return results
}

const membersOfGroup = async (deps: Deps, tenantId: string, groupId: string): Promise<Member[]> =>
  (await serversOfTenant(deps.db, tenantId)).filter((s) => s.groupId === groupId && s.decommissionedAt === null)

/** POST /listing-profiles/{id}/apply: every managed server of the group, by name. */
export async function applyProfile(ctx: Ctx & { id: string }) {
  const { deps, actor, audit } = ctx
  const p = await load(deps, actor, ctx.id)
  const results = await applyTo(deps, actor, audit, p, await membersOfGroup(deps, actor.tenantId, p.groupId))
  const applied = await withTransaction(deps.db, async (tx) => {
    const current = (await findProfile(tx, actor.tenantId, p.id)) ?? p
    const at = deps.clock.nowUs()
    await updateProfile(tx, actor.tenantId, p.id, { appliedAt: at })
    await recordAudit(tx, deps, audit, { operation: 'listing_profiles.apply', targetKind: 'listing_profile', targetId: p.id })
    return { ...current, appliedAt: at }
  })
  return { profile: await profileView(deps, applied), results }
}

/**
 * The listing-profiles.apply job (docs/marketplaces.md "Listing profiles"): a profile the owner has
 * applied is applied to each managed member that has not had it yet (a server that joined the group
 * since), and again to one skipped for want of a link that now has one. A refused member waits for
 * the owner (its reason is on the profile); a changed profile waits for the owner's next apply.
 * Each tenant apart; a frozen account gets nothing published.
 */
export async function applyProfilesToNewMembers(deps: Deps, tenants: TenantWalk): Promise<string> {
  const byTenant = new Map<string, ProfileRow[]>()
  for (const p of await appliedProfiles(deps.db)) byTenant.set(p.tenantId, [...(byTenant.get(p.tenantId) ?? []), p])
  let applied = 0
  for (const [tenantId, profiles] of byTenant) {
    if ((await accountStateOf(deps.db, tenantId)) === 'frozen') continue
    await tenants.run(tenantId, async () => {
      const { actor, audit } = systemContext(tenantId)
      const linked = new Set((await linkedMachines(deps.db, tenantId)).map((l) => `${l.serverId}:${l.marketplace}`))
      for (const p of profiles) {
        const had = new Map((await membersOf(deps.db, tenantId, p.id)).map((m) => [m.serverId, m]))
        const due = (await membersOfGroup(deps, tenantId, p.groupId)).filter((s) => {
          const m = had.get(s.id)
          return !m || (m.outcome === 'skipped' && linked.has(`${s.id}:${p.marketplace}`))
        })
        if (!due.length) continue
        const results = await applyTo(deps, actor, audit, p, due)
        applied += results.filter((r) => r.outcome !== 'skipped').length
        await withTransaction(deps.db, (tx) =>
          recordAudit(tx, deps, audit, { operation: 'listing_profiles.apply_new_members', targetKind: 'listing_profile', targetId: p.id }),
        )
      }
    })
  }
  return `${byTenant.size} tenants with applied profiles; ${applied} new members applied`
}
