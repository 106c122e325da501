import { randomBytes, randomInt } from 'node:crypto'
import { withTransaction, type DbOrTx } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { hashPassword, passwordProblem } from '../../platform/passwords'
import { AUTH_LIMITS, limitByEmail, limitByNetwork } from './limits'
import { hashSecret, hmac, safeEqual } from '../../platform/secrets'
import { AccountErrors } from './accounts.errors'
import {
  findEmailCode,
  findTicket,
  insertTicket,
  markTicketConsumed,
  updateEmailCode,
  upsertEmailCode,
  type Purpose,
  type TicketRow,
} from './accounts.repository'

/**
 * Emailed codes and the tickets they buy (docs/auth.md "Codes and tickets": 6 digits, 10 minutes, 5
 * attempts, 60 s resend cooldown, ticket ≤64 chars expiring 10 minutes after verify). Codes come
 * from the CSPRNG and are stored only as an HMAC keyed from SECRET_KEY; every failing verification
 * answers the same 401, whatever the reason.
 */
export const CODE_TTL_SECONDS = 600
export const CODE_MAX_ATTEMPTS = 5
export const RESEND_COOLDOWN_SECONDS = 60
const TICKET_TTL_SECONDS = 600

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase()
}

/** Keyed hash of an address: rate-limit buckets and code rows never hold it readable. */
export function emailKey(deps: Deps, email: string): string {
  return hmac(deps.keys.email, normalizeEmail(email)).toString('hex')
}

function codeHash(deps: Deps, purpose: Purpose, emailHash: string, code: string): string {
  return hmac(deps.keys.codes, `${purpose}\n${emailHash}\n${code}`).toString('hex')
}

/**
 * Stores a fresh code for (purpose, email) and returns it, or null for an inert row (an address
 * that must get no code). Inside the cooldown it refuses with the wait (429, Retry-After), inert or not.
 */
export async function issueCode(
  tx: DbOrTx,
  deps: Deps,
  input: { purpose: Purpose; email: string; inert: boolean; tenantName?: string | null; userId?: string | null },
): Promise<string | null> {
  const now = deps.clock.nowUs()
  const email = normalizeEmail(input.email)
  const emailHash = emailKey(deps, email)
  const existing = await findEmailCode(tx, input.purpose, emailHash)
  if (existing) {
    const waitUs = existing.lastSentAt + RESEND_COOLDOWN_SECONDS * 1_000_000 - now
    if (waitUs > 0) throw AccountErrors.resendCooldown(Math.ceil(waitUs / 1_000_000))
  }
  const code = input.inert ? null : String(randomInt(0, 1_000_000)).padStart(6, '0')
  await upsertEmailCode(tx, {
    id: existing?.id ?? deps.newId(),
    purpose: input.purpose,
    emailHash,
    email,
    tenantName: input.tenantName ?? null,
    userId: input.userId ?? null,
    codeHash: code ? codeHash(deps, input.purpose, emailHash, code) : null,
    inert: input.inert,
    attempts: 0,
    expiresAt: now + CODE_TTL_SECONDS * 1_000_000,
    lastSentAt: now,
    consumedAt: null,
    createdAt: existing?.createdAt ?? now,
  })
  return code
}

/**
 * Checks a code; on success consumes it and returns a new single-use ticket for the same purpose.
 * A wrong code still counts against the row (committed before the refusal is thrown).
 */
async function redeemCode(deps: Deps, input: { purpose: Purpose; email: string; code: string }): Promise<string> {
  const now = deps.clock.nowUs()
  const email = normalizeEmail(input.email)
  const emailHash = emailKey(deps, email)
  const given = codeHash(deps, input.purpose, emailHash, input.code)
  const ticket = await withTransaction(deps.db, async (tx) => {
    const row = await findEmailCode(tx, input.purpose, emailHash)
    const live = row && !row.inert && row.consumedAt === null && row.expiresAt > now && row.attempts < CODE_MAX_ATTEMPTS
    const matches = safeEqual(row?.codeHash ?? '', given)
    if (!row || !live || !matches) {
      if (row && row.consumedAt === null) await updateEmailCode(tx, row.id, { attempts: row.attempts + 1 })
      return null
    }
    await updateEmailCode(tx, row.id, { consumedAt: now })
    const token = randomBytes(32).toString('base64url')
    await insertTicket(tx, {
      id: deps.newId(),
      purpose: input.purpose,
      tokenHash: hashSecret(token),
      email,
      tenantName: row.tenantName,
      userId: row.userId,
      expiresAt: now + TICKET_TTL_SECONDS * 1_000_000,
      consumedAt: null,
      createdAt: now,
    })
    return token
  })
  if (!ticket) throw AccountErrors.codeRejected()
  return ticket
}

/** Consumes a ticket of this purpose inside the caller's transaction, or throws the ticket refusal (401). */
export async function consumeTicket(tx: DbOrTx, deps: Deps, purpose: Purpose, ticket: string): Promise<TicketRow> {
  const row = ticket.length <= 64 ? await findTicket(tx, hashSecret(ticket)) : undefined
  const now = deps.clock.nowUs()
  if (!row || row.purpose !== purpose || row.consumedAt !== null || row.expiresAt <= now) throw AccountErrors.ticketInvalid()
  await markTicketConsumed(tx, row.id, now)
  return row
}

/** The verify step of signup and reset: rate limits by network and email, then the code for a ticket. */
export async function verifyCodeForTicket(deps: Deps, purpose: Purpose, input: { email: string; code: string }, ip: string) {
  await limitByNetwork(deps, `${purpose}-verify`, ip, AUTH_LIMITS.verify.perNetwork)
  await limitByEmail(deps, `${purpose}-verify`, emailKey(deps, input.email), AUTH_LIMITS.verify.perEmail)
  return { ticket: await redeemCode(deps, { purpose, email: input.email, code: input.code }) }
}

/** The first half of both complete steps: rate limit, password policy (422), then the slow hash. */
export async function checkedPasswordHash(deps: Deps, purpose: Purpose, password: string, ip: string): Promise<string> {
  await limitByNetwork(deps, `${purpose}-complete`, ip, AUTH_LIMITS.complete.perNetwork)
  const weak = passwordProblem(password)
  if (weak) throw AccountErrors.weakPassword(weak, weakPasswordDetail(weak.code))
  return await hashPassword(password)
}

function weakPasswordDetail(code: string): string {
  if (code === 'too_short') return 'the password must have at least 8 characters'
  if (code === 'too_long') return 'the password must have at most 256 characters'
  return 'this password is among the most common ones; choose another'
}
