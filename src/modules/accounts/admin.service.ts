import { randomBytes } from 'node:crypto'
import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { hashSecret } from '../../platform/secrets'
import { insertTenant, listTenants } from '../tenants'
import { findUserByEmail, insertUser } from '../users'
import { AccountErrors } from './accounts.errors'
import { insertTicket } from './accounts.repository'
import { normalizeEmail } from './codes.service'

/** How long the operator's set-password ticket lives: long enough to hand over. */
export const ADMIN_TICKET_TTL_SECONDS = 24 * 3600

/**
 * The operator's way in while signup is off: creates a tenant (free plan) and its owner without a
 * password, and returns a one-time ticket that POST /auth/password-reset/complete accepts.
 */
export async function createAccount({ deps, input }: { deps: Deps; input: { email: string; tenantName: string } }) {
  const email = normalizeEmail(input.email)
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254) throw AccountErrors.badEmail(input.email)
  const tenantName = input.tenantName.trim()
  if (!tenantName || tenantName.length > 128) throw AccountErrors.badTenantName()
  const ticket = randomBytes(32).toString('base64url')
  return await withTransaction(deps.db, async (tx) => {
    if (await findUserByEmail(tx, email)) throw AccountErrors.accountExists(email)
    const now = deps.clock.nowUs()
    const tenantId = deps.newId()
    const userId = deps.newId()
    await insertTenant(tx, { id: tenantId, name: tenantName, planCode: 'free', accountState: 'active', createdAt: now })
    await insertUser(tx, {
      id: userId,
      tenantId,
      email,
      passwordHash: null,
      role: 'owner',
      displayName: null,
      timezone: 'UTC',
      locale: 'en',
      createdAt: now,
      updatedAt: now,
    })
    await insertTicket(tx, {
      id: deps.newId(),
      purpose: 'reset',
      tokenHash: hashSecret(ticket),
      email,
      tenantName,
      userId,
      expiresAt: now + ADMIN_TICKET_TTL_SECONDS * 1_000_000,
      consumedAt: null,
      createdAt: now,
    })
    return { tenantId, userId, email, ticket }
  })
}

export async function tenantsOverview({ deps }: { deps: Deps }) {
  return await listTenants(deps.db)
}
