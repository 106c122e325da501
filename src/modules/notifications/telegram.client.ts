import { request } from 'undici'
import type { Deps } from '../../platform/context'

/**
 * The Telegram Bot API (https://core.telegram.org/bots/api): POST `${TELEGRAM_API_URL}/bot<token>/<method>`
 * with a JSON body; every answer is `{ok: true, result}` or `{ok: false, error_code, description,
 * parameters?: {retry_after}}`. The token is part of the URL, so no URL and no transport error text
 * (which may quote it) ever reaches a log line or a stored error.
 */

const TIMEOUT_MS = 15_000

export type TelegramAnswer<T> =
  | { ok: true; result: T }
  | { ok: false; status: number | null; description: string; retryAfterSeconds: number | null; unreachable: boolean }

export function telegramConfigured(deps: Deps): boolean {
  return deps.config.telegram.botToken !== null
}

export async function telegramCall<T>(deps: Deps, method: string, params: Record<string, unknown>): Promise<TelegramAnswer<T>> {
  const token = deps.config.telegram.botToken
  if (!token)
    return { ok: false, status: null, description: 'the chat channel is not configured (TELEGRAM_BOT_TOKEN)', retryAfterSeconds: null, unreachable: true }
  const url = `${deps.config.telegram.apiUrl.replace(/\/+$/, '')}/bot${token}/${method}`
  let status: number
  let text: string
  // Nothing leaves the process on the strength of a write a power loss could still undo.
  await deps.durable.barrier()
  try {
    const res = await request(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(params),
      headersTimeout: TIMEOUT_MS,
      bodyTimeout: TIMEOUT_MS,
      signal: AbortSignal.timeout(TIMEOUT_MS),
    })
    status = res.statusCode
    text = await res.body.text()
  } catch (e) {
    const code = (e as { code?: unknown })?.code
    return {
      ok: false,
      status: null,
      description: `Telegram could not be reached (${typeof code === 'string' ? code : 'error'})`,
      retryAfterSeconds: null,
      unreachable: true,
    }
  }
  let body: Record<string, unknown> | null = null
  try {
    const parsed = JSON.parse(text)
    body = typeof parsed === 'object' && parsed !== null ? parsed : null
  } catch {
    body = null
  }
  if (body?.ok === true) return { ok: true, result: body.result as T }
  const retry = (body?.parameters as { retry_after?: unknown } | undefined)?.retry_after
  return {
    ok: false,
    status,
    description: (typeof body?.description === 'string' ? body.description : `HTTP ${status}`).split(token).join('<token>').slice(0, 256),
    retryAfterSeconds: typeof retry === 'number' && retry > 0 ? retry : null,
    unreachable: status >= 500,
  }
}
