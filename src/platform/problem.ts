/**
 * Problem documents (RFC 9457; docs/conventions.md "Errors"). Every error the service answers is
 * one of these, with `code` drawn from the closed set listed there. Services throw their module's
 * DomainError (src/platform/domain-error.ts); the platform throws ProblemError for what is purely
 * HTTP (bodies, headers, cursors, access); src/platform/http.ts turns both into the answer.
 */

export const PROBLEM_CODES = {
  unauthorized: {
    status: 401,
    title: 'Unauthorized',
    about: 'Credentials are missing, invalid, expired or revoked; or a signup or reset code was not accepted.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    about:
      'The caller is known but its role or token scopes do not cover this operation, or the captcha check failed. A token limited to servers (server_allowlist) gets it for something of the whole tenant, with errors[0].code `tenant_wide`, or for a request reaching other servers through a group or GPU model, with `outside_allowlist`.',
  },
  csrf_rejected: {
    status: 403,
    title: 'Cross-site request rejected',
    about:
      'A cookie-authenticated unsafe request came from another site (Sec-Fetch-Site cross-site, or an Origin other than PUBLIC_URL). Bearer-token requests are never subject to this.',
  },
  not_found: {
    status: 404,
    title: 'Not found',
    about:
      'No such resource in this tenant, no such route, or no such method on the route (405, with an Allow header). An identifier of another tenant answers exactly like one that does not exist.',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    about:
      'The request conflicts with the current state of the resource. Also used for 412 (If-Match does not match the current version) and for a retry whose Idempotency-Key is still being processed (with Retry-After).',
  },
  idempotency_conflict: {
    status: 409,
    title: 'Idempotency key reused',
    about: 'The Idempotency-Key was already used with a different request body, route or method. Use a new key for a new request.',
  },
  validation_failed: {
    status: 422,
    title: 'Validation failed',
    about:
      'The request did not pass validation; `errors[]` lists each offending field as a JSON Pointer with a short code. Also used for 415 when a JSON operation is sent another content type.',
  },
  rate_limited: { status: 429, title: 'Too many requests', about: 'A rate limit was exceeded. Retry after the number of seconds in the Retry-After header.' },
  payload_too_large: { status: 413, title: 'Payload too large', about: 'The request body is larger than the limit (1 MiB by default).' },
  unsupported_agent_version: {
    status: 426,
    title: 'Agent too old',
    about: 'The agent reported a version below the minimum this deployment accepts (MIN_AGENT_VERSION). Update the agent.',
  },
  temporarily_unavailable: {
    status: 503,
    title: 'Temporarily unavailable',
    about:
      'A dependency is not configured or temporarily unavailable; retry after Retry-After. The rest of the API keeps working. An unexpected internal failure also answers with this code and status 500, carrying a request_id to quote.',
  },
  offline_queue_full: { status: 409, title: 'Offline queue full', about: 'The server is offline and its queue of pending commands is full.' },
  online_queue_full: { status: 409, title: 'Online queue full', about: 'The server is online but its queue of undelivered commands is full.' },
  plan_required: { status: 409, title: 'Plan required', about: 'The tenant has no plan assignment.' },
  server_limit_reached: {
    status: 409,
    title: 'Server limit reached',
    about: 'The plan’s managed-server limit (fleet.servers.max) is reached, or the fleet exceeds the target plan’s limit.',
  },
  feature_not_entitled: {
    status: 403,
    title: 'Feature not in plan',
    about: 'The tenant’s plan does not include this capability, or the target plan is contract-priced.',
  },
  account_in_grace: { status: 403, title: 'Account in grace', about: 'The account is in grace and this operation is denied during grace.' },
  account_frozen: {
    status: 403,
    title: 'Account frozen',
    about: 'The account is frozen and this operation is denied while frozen. A top-up that brings the balance above zero unfreezes it.',
  },
  payment_pending: { status: 409, title: 'Payment pending', about: 'A payment for this order is still pending.' },
  payment_expired: { status: 409, title: 'Payment expired', about: 'The payment for this order expired.' },
  payment_amount_mismatch: { status: 409, title: 'Payment amount mismatch', about: 'The confirmed payment amount does not match the order.' },
  change_already_pending: {
    status: 409,
    title: 'Change already pending',
    about: 'A plan change is already pending; send If-Match with the subscription version to replace it.',
  },
  change_already_applied: { status: 409, title: 'Change already applied', about: 'The plan change was already applied and cannot be cancelled.' },
  change_effective: {
    status: 409,
    title: 'Change already effective',
    about: 'The plan change is already in effect for the current day and cannot be cancelled.',
  },
  reserve_not_covered: { status: 409, title: 'Reserve not covered', about: 'The balance does not cover the reserve the plan change needs.' },
  direction_changed: { status: 409, title: 'Direction changed', about: 'The catalogue price moved so the ordered change would now be an upgrade.' },
} as const satisfies Record<string, { status: number; title: string; about: string }>

export type ProblemCode = keyof typeof PROBLEM_CODES

export const PROBLEM_CODE_LIST = Object.keys(PROBLEM_CODES) as ProblemCode[]

export type FieldError = { path: string; code: string }

export type ProblemInit = {
  detail?: string
  errors?: FieldError[]
  /** Overrides the code's usual status (412, 415, 405, 500 reuse codes of the closed set). */
  status?: number
  headers?: Record<string, string>
  /** Never sent to the client; logged with the request id. */
  internal?: unknown
  /** An OAuth endpoint's error (RFC 6749 §5.2, RFC 7591 §3.2.2): `error` and `error_description` beside the problem's members. */
  oauth?: { error: string; error_description: string }
}

export class ProblemError extends Error {
  readonly status: number
  readonly detail?: string
  readonly errors?: FieldError[]
  readonly headers: Record<string, string>
  readonly internal?: unknown
  readonly oauth?: { error: string; error_description: string }

  constructor(
    readonly code: ProblemCode,
    init: ProblemInit = {},
  ) {
    super(init.detail ?? PROBLEM_CODES[code].title)
    this.status = init.status ?? PROBLEM_CODES[code].status
    this.detail = init.detail
    this.errors = init.errors?.slice(0, 100)
    this.headers = init.headers ?? {}
    this.internal = init.internal
    this.oauth = init.oauth
  }
}

/** Shorthands for the errors every module raises. */
export const problems = {
  notFound: (detail = 'resource not found') => new ProblemError('not_found', { detail }),
  conflict: (detail: string) => new ProblemError('conflict', { detail }),
  preconditionFailed: () => new ProblemError('conflict', { status: 412, detail: 'If-Match does not match the current version of the resource' }),
  validation: (errors: FieldError[], detail = 'the request did not pass validation') => new ProblemError('validation_failed', { detail, errors }),
  field: (path: string, code: string, detail?: string) =>
    new ProblemError('validation_failed', { detail: detail ?? `${path || 'the request'} is not valid (${code})`, errors: [{ path, code }] }),
  rateLimited: (retryAfterSeconds: number) =>
    new ProblemError('rate_limited', {
      detail: `rate limit exceeded; retry in ${retryAfterSeconds} s`,
      headers: { 'Retry-After': String(retryAfterSeconds) },
    }),
  unavailable: (detail: string, retryAfterSeconds = 30) =>
    new ProblemError('temporarily_unavailable', { detail, headers: { 'Retry-After': String(retryAfterSeconds) } }),
}

/**
 * Titles for the statuses a code is reused with (the closed set of codes has no code of its own for
 * them): the title always names the status the client got, the code says which family.
 */
const STATUS_TITLES: Readonly<Record<number, string>> = {
  405: 'Method not allowed',
  412: 'Precondition failed',
  415: 'Unsupported media type',
  426: 'Upgrade required',
  500: 'Internal server error',
}

function problemTitle(code: ProblemCode, status: number): string {
  return status === PROBLEM_CODES[code].status ? PROBLEM_CODES[code].title : (STATUS_TITLES[status] ?? PROBLEM_CODES[code].title)
}

export type ProblemDocument = {
  type: string
  title: string
  status: number
  code: ProblemCode
  detail?: string
  instance?: string
  request_id?: string
  errors?: FieldError[]
}

function problemType(publicUrl: string, code: ProblemCode): string {
  return `${publicUrl}/problems/${code}`
}

export function toProblemDocument(e: ProblemError, ctx: { publicUrl: string; requestId?: string; instance?: string }): ProblemDocument {
  const doc: ProblemDocument = {
    type: problemType(ctx.publicUrl, e.code),
    title: problemTitle(e.code, e.status),
    status: e.status,
    code: e.code,
  }
  if (e.detail) doc.detail = e.detail.slice(0, 2048)
  if (ctx.instance) doc.instance = ctx.instance.slice(0, 512)
  if (ctx.requestId) doc.request_id = ctx.requestId
  if (e.errors?.length) doc.errors = e.errors.map((x) => ({ path: x.path.slice(0, 512), code: x.code.slice(0, 64) }))
  if (e.oauth) Object.assign(doc, { error: e.oauth.error, error_description: e.oauth.error_description.slice(0, 512) })
  return doc
}
