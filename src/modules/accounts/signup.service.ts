import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import { requireCaptcha } from './accounts.captcha'
import type { Deps } from '../../platform/context'
import { recordMemberEvent } from '../audit'
import { enqueueMail } from '../mail'
import { startSession, type NewSession } from '../sessions'
import { insertTenant } from '../tenants'
import { findUserByEmail, insertUser, type UserRow } from '../users'
import { AccountErrors } from './accounts.errors'
import { signupCodeMail, signupTakenMail } from './accounts.mail'
import type { CodeCheck, SetPassword, SignupStart } from './accounts.model'
import { checkedPasswordHash, consumeTicket, emailKey, issueCode, normalizeEmail, RESEND_COOLDOWN_SECONDS, verifyCodeForTicket } from './codes.service'
import { AUTH_LIMITS, limitByEmail, limitByNetwork } from './limits'

export type Caller = { ip: string; userAgent: string | null }

/**
 * Signup: start → emailed code → verify → ticket → complete. A taken address gets an "already have
 * an account" email instead of a code, through the same steps: same answer, same cooldown, and the
 * mail leaves after the response through the outbox, so nothing outside tells the two apart.
 */
export async function startSignup({ deps, input, caller }: { deps: Deps; input: Static<typeof SignupStart>; caller: Caller }) {
  const email = normalizeEmail(input.email)
  await limitByNetwork(deps, 'signup-start', caller.ip, AUTH_LIMITS.start.perNetwork)
  await limitByEmail(deps, 'signup-start', emailKey(deps, email), AUTH_LIMITS.start.perEmail)
  await requireCaptcha(deps, input.captcha_token, caller.ip)
  await withTransaction(deps.db, async (tx) => {
    const taken = (await findUserByEmail(tx, email)) !== undefined
    const code = await issueCode(tx, deps, { purpose: 'signup', email, inert: taken, tenantName: input.tenant_name.trim() })
    await enqueueMail(tx, deps, code ? signupCodeMail(email, code, deps.config.publicUrl) : signupTakenMail(email, deps.config.publicUrl))
  })
  deps.mail.kick()
  return { resend_cooldown_seconds: RESEND_COOLDOWN_SECONDS }
}

export async function verifySignup({ deps, input, caller }: { deps: Deps; input: Static<typeof CodeCheck>; caller: Caller }) {
  return await verifyCodeForTicket(deps, 'signup', input, caller.ip)
}

/** Creates the tenant (free plan), its owner and a session, from a signup ticket. */
export async function completeSignup({
  deps,
  input,
  caller,
}: {
  deps: Deps
  input: Static<typeof SetPassword>
  caller: Caller
}): Promise<{ user: UserRow; session: NewSession }> {
  const passwordHash = await checkedPasswordHash(deps, 'signup', input.password, caller.ip)
  return await withTransaction(deps.db, async (tx) => {
    const ticket = await consumeTicket(tx, deps, 'signup', input.ticket)
    if (await findUserByEmail(tx, ticket.email)) throw AccountErrors.emailTaken()
    const now = deps.clock.nowUs()
    const tenantId = deps.newId()
    await insertTenant(tx, { id: tenantId, name: ticket.tenantName ?? ticket.email, planCode: 'free', accountState: 'active', createdAt: now })
    const user: UserRow = {
      id: deps.newId(),
      tenantId,
      email: ticket.email,
      passwordHash,
      role: 'owner',
      displayName: null,
      timezone: 'UTC',
      locale: 'en',
      createdAt: now,
      updatedAt: now,
    }
    await insertUser(tx, user)
    await recordMemberEvent(tx, deps, { tenantId, userId: user.id, ...caller }, 'auth.signup')
    const session = await startSession(tx, deps, { userId: user.id, ...caller })
    return { user, session }
  })
}
