import { ProblemError } from '../../platform/problem'

/**
 * The OAuth endpoints' errors (docs/conventions.md "Errors", the OAuth exception): the token,
 * registration and revocation endpoints answer every error as `application/json`
 * `{"error", "error_description"}` (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1), which is what
 * an OAuth client library reads, never as a problem document. Services throw `oauthError(…)`; the
 * platform renders every failure (a thrown OAuth error, a body it refused, a rate limit, a 500) as a
 * problem document first, and the route's `mapResponse` hook (`oauthAnswers`) rewrites it here, so
 * one path handles what the service refused and what never reached it.
 */

export type OAuthEndpoint = 'token' | 'register' | 'revoke'

/** An OAuth refusal, thrown by a service: `error` is the RFC's code, `description` a sentence for the developer. */
export function oauthError(error: string, description: string, status = 400): ProblemError {
  return new ProblemError('validation_failed', { status, detail: description, oauth: { error, error_description: description } })
}

/** RFC 6749 §5.2: error_description is printable ASCII without `"` and `\`. */
function describable(text: string): string {
  return text
    .replace(/["\\]/g, "'")
    .replace(/[^\x20-\x7e]/g, '?')
    .slice(0, 512)
}

type ProblemBody = {
  status?: number
  detail?: string
  title?: string
  request_id?: string
  errors?: { path: string; code: string }[]
  error?: string
  error_description?: string
}

/** The RFC code of a failure that was not an OAuth refusal of the service: refused bodies, limits, our own faults. */
function codeOf(endpoint: OAuthEndpoint, status: number, problem: ProblemBody): string {
  if (status >= 500) return status === 503 ? 'temporarily_unavailable' : 'server_error'
  if (status === 429) return 'temporarily_unavailable'
  if (endpoint === 'register') return problem.errors?.some((e) => e.path.startsWith('/redirect_uris')) ? 'invalid_redirect_uri' : 'invalid_client_metadata'
  return 'invalid_request'
}

function descriptionOf(status: number, problem: ProblemBody): string {
  if (problem.error_description) return problem.error_description
  if (status >= 500) return `the request could not be completed; quote request id ${problem.request_id ?? 'unknown'}`
  const fields = (problem.errors ?? []).map((e) => `${e.path || 'body'}: ${e.code}`).join(', ')
  return [problem.detail ?? problem.title ?? 'the request was refused', fields].filter(Boolean).join(': ')
}

/**
 * The route hook (Elysia `mapResponse`) of an OAuth endpoint: a problem document becomes the RFC's
 * error body, same status (422 from body validation becomes 400, as the RFCs want), same headers
 * (Retry-After, x-request-id), `Cache-Control: no-store`. Other answers pass untouched.
 */
export function oauthAnswers(endpoint: OAuthEndpoint) {
  return async ({ response }: { response: unknown }): Promise<Response | undefined> => {
    if (!(response instanceof Response)) return undefined
    if (!response.headers.get('content-type')?.startsWith('application/problem+json')) return undefined
    const problem = (await response.json().catch(() => ({}))) as ProblemBody
    const status = response.status === 422 ? 400 : response.status
    const headers = new Headers(response.headers)
    headers.set('content-type', 'application/json')
    headers.set('cache-control', 'no-store')
    headers.set('pragma', 'no-cache')
    headers.delete('content-length')
    const body = { error: problem.error ?? codeOf(endpoint, status, problem), error_description: describable(descriptionOf(status, problem)) }
    return new Response(JSON.stringify(body), { status, headers })
  }
}
