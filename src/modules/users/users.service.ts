import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import type { FieldError } from '../../platform/problem'
import { formatTimestamp } from '../../platform/time'
import { UserErrors } from './users.errors'
import type { MemberQuery, MePatch } from './users.model'
import { findTenantUser, listTenantUsers, updateUser, type UserRow } from './users.repository'

export function meView(u: UserRow) {
  return {
    id: u.id,
    email: u.email,
    tenant_id: u.tenantId,
    role: u.role,
    display_name: u.displayName,
    timezone: u.timezone,
    locale: u.locale,
    created_at: formatTimestamp(u.createdAt),
  }
}

/** The member acting; agents and the system have no profile. */
function memberId(actor: Actor): string {
  if (!actor.userId) throw UserErrors.notAMember()
  return actor.userId
}

export async function getMe({ deps, actor }: { deps: Deps; actor: Actor }) {
  const user = await findTenantUser(deps.db, actor.tenantId, memberId(actor))
  if (!user) throw UserErrors.userNotFound()
  return meView(user)
}

/**
 * The IANA zone's canonical spelling ("europe/berlin" → "Europe/Berlin"), or null. Intl knows the
 * IANA database (names and their aliases) and throws RangeError for anything else, but it also
 * accepts UTC offsets ("+05:00"), which are not zone names and are refused here.
 */
function canonicalTimeZone(tz: string): string | null {
  if (!/^[A-Za-z]/.test(tz)) return null
  try {
    return new Intl.DateTimeFormat('en', { timeZone: tz }).resolvedOptions().timeZone
  } catch {
    return null
  }
}

function canonicalLocale(tag: string): string | null {
  try {
    return Intl.getCanonicalLocales(tag)[0] ?? null
  } catch {
    return null
  }
}

export async function updateMe({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof MePatch> }) {
  const errors: FieldError[] = []
  const timezone = input.timezone === undefined ? undefined : canonicalTimeZone(input.timezone)
  if (timezone === null) errors.push({ path: '/timezone', code: 'unknown_time_zone' })
  const locale = input.locale === undefined ? undefined : canonicalLocale(input.locale)
  if (locale === null) errors.push({ path: '/locale', code: 'invalid_locale' })
  if (errors.length) throw UserErrors.badPreferences(undefined, { fields: errors })
  return await withTransaction(deps.db, async (tx) => {
    const user = await findTenantUser(tx, actor.tenantId, memberId(actor))
    if (!user) throw UserErrors.userNotFound()
    const patch: Partial<UserRow> = { updatedAt: deps.clock.nowUs() }
    if (timezone) patch.timezone = timezone
    if (locale) patch.locale = locale
    if (input.display_name !== undefined) patch.displayName = input.display_name
    await updateUser(tx, actor.tenantId, user.id, patch)
    return meView({ ...user, ...patch })
  })
}

export async function listMembers({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof MemberQuery> }) {
  return await paginate(deps.keys.cursor, {
    scope: `users:${actor.tenantId}`,
    input,
    fetch: (after: { id: string } | undefined, take) => listTenantUsers(deps.db, actor.tenantId, after?.id, take),
    position: (r) => ({ id: r.id }),
    view: (u) => ({
      id: u.id,
      email: u.email,
      role: u.role,
      display_name: u.displayName,
      created_at: formatTimestamp(u.createdAt),
    }),
  })
}
