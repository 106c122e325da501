/**
 * The console's only way to the service: same-origin requests to /api/v1 with the session cookie
 * (the browser sends it; script never sees it). Every error answer is a problem document
 * (docs/conventions.md); it reaches the page as an ApiError carrying that document, so a form can
 * put each `errors[].path` next to its field.
 */

export type FieldError = { path: string; code: string }
export type Problem = {
  type?: string
  title: string
  status: number
  code: string
  detail?: string
  errors?: FieldError[]
  request_id?: string
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly problem: Problem,
    readonly retryAfter: number | null = null,
  ) {
    super(problem.detail ?? problem.title)
  }
}

export type Query = Record<string, string | number | boolean | null | undefined | string[]>

export type RequestOptions = {
  body?: unknown
  query?: Query
  /** Operations that take Idempotency-Key: one key per user action, kept across its retries. */
  idempotencyKey?: string
  ifMatch?: string | null
  ifNoneMatch?: string | null
}

export type Answer<T> = { status: number; data: T; etag: string | null }

/** Called on a 401 from anything but the sign-in flows: the session ended (src: lib/session.ts). */
let sessionEnded: () => void = () => {}
export function onSessionEnded(handler: () => void): void {
  sessionEnded = handler
}

function queryString(query?: Query): string {
  if (!query) return ''
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null || v === '') continue
    if (Array.isArray(v)) for (const item of v) params.append(k, item)
    else params.set(k, String(v))
  }
  const s = params.toString()
  return s ? `?${s}` : ''
}

const isProblem = (x: unknown): x is Problem => typeof x === 'object' && x !== null && typeof (x as Problem).code === 'string'

/** A read refused for its rate (429) is asked again after the Retry-After it names, up to this many times and this long a wait. */
const READ_RETRIES = 3
const READ_RETRY_MAX_SECONDS = 30

export async function request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<Answer<T>> {
  // A report computed anew is an expensive read with a per-caller limit (docs/reports.md): a page
  // that reads several waits the Retry-After out instead of showing the refusal. Writes never retry.
  for (let attempt = 0; ; attempt++) {
    try {
      return await requestOnce<T>(method, path, opts)
    } catch (e) {
      const wait = e instanceof ApiError && e.status === 429 && method === 'GET' ? e.retryAfter : null
      if (wait === null || wait > READ_RETRY_MAX_SECONDS || attempt >= READ_RETRIES) throw e
      await new Promise((resolve) => setTimeout(resolve, wait * 1000))
    }
  }
}

async function requestOnce<T>(method: string, path: string, opts: RequestOptions): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: 'application/json' }
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey
  if (opts.ifMatch) headers['if-match'] = opts.ifMatch
  if (opts.ifNoneMatch) headers['if-none-match'] = opts.ifNoneMatch
  let res: Response
  try {
    res = await fetch(`/api/v1${path}${queryString(opts.query)}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'same-origin',
    })
  } catch {
    throw new ApiError(0, { title: 'No connection', status: 0, code: 'network', detail: 'gpuhq could not be reached. Check the connection and try again.' })
  }
  const etag = res.headers.get('etag')
  if (res.status === 304) return { status: 304, data: undefined as T, etag }
  const text = await res.text()
  let body: unknown = null
  try {
    body = text ? JSON.parse(text) : null
  } catch {
    body = null
  }
  if (!res.ok) {
    const problem = isProblem(body) ? body : { title: res.statusText || 'Request failed', status: res.status, code: 'unknown' }
    if (res.status === 401 && !path.startsWith('/auth/')) sessionEnded()
    const retry = Number(res.headers.get('retry-after'))
    throw new ApiError(res.status, problem, Number.isFinite(retry) && retry > 0 ? retry : null)
  }
  return { status: res.status, data: body as T, etag }
}

export const get = <T>(path: string, query?: Query) => request<T>('GET', path, { query }).then((a) => a.data)

/** A fresh Idempotency-Key for one user action. */
export const newKey = () => crypto.randomUUID()

/** A page of a list operation (docs/conventions.md "Pagination"). */
export type Page<T> = { items: T[]; next_cursor: string | null }
