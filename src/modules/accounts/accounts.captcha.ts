import { request } from 'undici'
import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { sha256Hex } from '../../platform/secrets'
import { AccountErrors } from './accounts.errors'
import { spendCaptchaToken } from './accounts.repository'

/**
 * Captcha for the account operations (Cloudflare Turnstile's siteverify form protocol; docs/auth.md). When CAPTCHA_SECRET is set, the
 * operations that need it fail closed: a missing token, a rejected one, a token already spent here,
 * or a verifier that cannot be asked (network error, timeout, non-2xx, unreadable answer) all
 * answer 403 forbidden with detail "captcha verification failed". The body never depends on which.
 */
const CAPTCHA_TIMEOUT_MS = 5000

export async function requireCaptcha(deps: Deps, token: string | null | undefined, ip: string): Promise<void> {
  const secret = deps.config.captcha.secret
  if (!secret) return
  if (!token || token.length > 2048) throw AccountErrors.captchaFailed()
  const tokenHash = sha256Hex(token)
  // Spend the token first: a token is single-use whatever the verifier says about a replay.
  const fresh = await withTransaction(deps.db, (tx) => spendCaptchaToken(tx, tokenHash, deps.clock.nowUs()))
  if (!fresh) throw AccountErrors.captchaFailed()
  let ok = false
  try {
    const res = await request(deps.config.captcha.verifyUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ secret, response: token, remoteip: ip }).toString(),
      headersTimeout: CAPTCHA_TIMEOUT_MS,
      bodyTimeout: CAPTCHA_TIMEOUT_MS,
      signal: AbortSignal.timeout(CAPTCHA_TIMEOUT_MS),
    })
    const text = await res.body.text()
    if (res.statusCode >= 200 && res.statusCode < 300) ok = (JSON.parse(text) as { success?: unknown }).success === true
  } catch (e) {
    deps.log.warn('captcha verifier unreachable', { error: e instanceof Error ? e.message : String(e) })
    ok = false
  }
  if (!ok) throw AccountErrors.captchaFailed()
}
