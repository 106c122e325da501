import { defineErrors, invalidField, type DomainError } from '../../platform/domain-error'
import type { FieldError } from '../../platform/problem'

const E = defineErrors('accounts', {
  codeRejected: { problem: 'unauthorized', message: 'the code is wrong, expired or used up; request a new one' },
  ticketInvalid: { problem: 'unauthorized', message: 'the ticket is not valid; verify a new code' },
  wrongCredentials: { problem: 'unauthorized', message: 'wrong email or password' },
  resendCooldown: { problem: 'rate_limited', message: 'rate limit exceeded' },
  signinBlocked: { problem: 'rate_limited', message: 'rate limit exceeded' },
  weakPassword: { problem: 'validation_failed', message: 'the password is too weak' },
  emailTaken: { problem: 'conflict', message: 'an account with this email already exists; sign in instead' },
  accountChanged: { problem: 'conflict', message: 'the account changed since the code was sent; start again' },
  accountExists: { problem: 'conflict', message: 'an account with this email already exists' },
  captchaFailed: { problem: 'forbidden', message: 'captcha verification failed' },
})

/** A wait of this many seconds, said the way every 429 of the service says it. */
const waitFor = (seconds: number) => ({ message: `rate limit exceeded; retry in ${seconds} s`, facts: { retryAfterSeconds: seconds } })

/**
 * What the account operations refuse. Every failing code or ticket answers the same 401, whatever
 * the reason, so nothing tells a wrong code from an expired one.
 */
export const AccountErrors = {
  codeRejected: () => E.codeRejected(),
  ticketInvalid: () => E.ticketInvalid(),
  wrongCredentials: () => E.wrongCredentials(),
  /** Inside the 60 s resend cooldown of a code (inert rows included). */
  resendCooldown: (seconds: number): DomainError => {
    const w = waitFor(seconds)
    return E.resendCooldown(w.message, w.facts)
  },
  /** Too many failed sign-ins from this network on this account. */
  signinBlocked: (seconds: number): DomainError => {
    const w = waitFor(seconds)
    return E.signinBlocked(w.message, w.facts)
  },
  weakPassword: (weak: FieldError, detail: string) => E.weakPassword(detail, { fields: [weak] }),
  emailTaken: () => E.emailTaken(),
  accountChanged: () => E.accountChanged(),
  accountExists: (email: string) => E.accountExists(`an account with ${email} already exists`),
  /** Missing, rejected, already spent, or the verifier could not be asked: one answer for all. */
  captchaFailed: () => E.captchaFailed(),
  badEmail: (email: string) => invalidField('accounts', '/email', 'format', `"${email}" is not an email address`),
  badTenantName: () => invalidField('accounts', '/tenant_name', 'too_long', 'the tenant name must have 1 to 128 characters'),
}
