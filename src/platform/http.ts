import { Elysia, ValidationError } from 'elysia'
import { Kind, type TSchema } from '@sinclair/typebox'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import { TransformDecodeCheckError, TransformDecodeError, TransformEncodeCheckError, TransformEncodeError, Value } from '@sinclair/typebox/value'
import type { Deps } from './context'
import { ProblemError, problems, toProblemDocument, type FieldError } from './problem'
import { excessiveDepthPointer, MAX_JSON_DEPTH } from './json-depth'
import { jsonTextMayHoldUnstorable, unstorablePointer } from './storable'
import { DomainError } from './domain-error'
import { BUSY_RETRY_AFTER_SECONDS, isDatabaseBusy } from '../../db/client'

/**
 * The HTTP conventions every route shares: request ids, the body limit, JSON-only bodies, and the
 * mapping of every failure to a problem document. Routes never build error responses themselves.
 */

export type RequestState = {
  id: string
  startUs: number
  ip: string
  /** Route template once routing matched, e.g. "/api/v1/servers/:id". */
  route?: string
  tenantId?: string
  /** Who acted, for the audit trail: "user", "pat", "agent", "mcp" and its id. */
  actor?: { kind: string; id: string | null }
  /** True once the operation wrote its own audit row inside its transaction. */
  audited?: boolean
  /** The request body as sent (UTF-8), for operations that verify a signature over it. */
  rawBody?: string
  /** Set by the idempotency layer when this request holds a key and must store its response. */
  idempotency?: HeldKey
  /** The request failed on a busy database (src/server.ts runs it again when nothing was written). */
  busy?: boolean
}

/** A key this request holds: what its first write inserts and its answer completes. */
export type HeldKey = {
  scope: string
  operation: string
  key: string
  fingerprint: string
  /** A row exists that the first write replaces (past retention, or a dead process's claim). */
  replace: boolean
  /** Set by the first write transaction, which wrote the row. */
  executed: boolean
}

const states = new WeakMap<Request, RequestState>()

export function beginRequest(request: Request, id: string, startUs: number, ip: string): RequestState {
  const state: RequestState = { id, startUs, ip }
  states.set(request, state)
  return state
}

/** The state of a request; requests handled without the server wrapper (app.handle in a test) get one lazily. */
export function requestState(request: Request, deps?: Pick<Deps, 'newId' | 'clock'>): RequestState {
  let state = states.get(request)
  if (!state) {
    state = { id: deps?.newId() ?? crypto.randomUUID(), startUs: deps?.clock.nowUs() ?? 0, ip: '127.0.0.1' }
    states.set(request, state)
  }
  return state
}

export type PlatformOptions = {
  /** "METHOD /route/template" of operations that also accept application/x-www-form-urlencoded. */
  formRoutes?: ReadonlySet<string>
  /** Methods registered for a concrete path, for 405 Allow; filled in once all routes exist. */
  allowedMethods: (path: string) => string[]
  /** Authenticates and authorises the request for its route (src/platform/access.ts); throws a problem. */
  checkAccess: (request: Request, route: string, params: Record<string, string | undefined> | undefined) => Promise<void>
  /** The body half of the access check (server ids anywhere in the body), run right after parsing. */
  checkBody?: (request: Request, body: unknown) => void
  /** The query half of the access check (server ids in query filters), run before validation. */
  checkQuery?: (request: Request, query: Record<string, unknown>) => void
}

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json$/i

export function platform(deps: Deps, options: PlatformOptions) {
  const limit = deps.config.bodyLimitBytes
  return (
    // The x-request-id header is set on every answer when it is sealed (src/server.ts sealAnswer), not
    // here: a header in Elysia's `set` makes it copy every Response a handler returns (new headers,
    // the body as a stream), and the copy loses what src/platform/wire-body.ts knows of the body.
    new Elysia({ name: 'platform' })
      .onTransform({ as: 'global' }, async ({ request, route, params, query }) => {
        requestState(request, deps).route = route
        await options.checkAccess(request, route, params as Record<string, string | undefined>)
        // After access, before anything reads them: text no database stores (NUL) is refused here.
        refuseUnstorable(params, 'a path parameter')
        refuseUnstorable(query, 'a query parameter')
        options.checkQuery?.(request, query as Record<string, unknown>)
      })
      .onParse({ as: 'global' }, async ({ request, contentType, route, params }) => {
        // Access is decided before the body is read: an anonymous caller gets 401 whatever it sent.
        requestState(request, deps).route = route
        await options.checkAccess(request, route, params as Record<string, string | undefined>)
        // After access: a switched-off operation (signup) answers 404 whatever size the body claims.
        const length = request.headers.get('content-length')
        if (length !== null && Number(length) > limit) throw tooLarge(limit)
        const raw = await readLimited(request, limit)
        if (raw.byteLength === 0) return null
        const media = (contentType ?? '').split(';')[0]!.trim().toLowerCase()
        if (JSON_TYPE.test(media)) {
          const text = decodeUtf8(raw)
          requestState(request, deps).rawBody = text
          const body = parseJsonText(text)
          if (jsonTextMayHoldUnstorable(text)) refuseUnstorable(body, 'the body')
          options.checkBody?.(request, body)
          return body
        }
        if (media === 'application/x-www-form-urlencoded' && options.formRoutes?.has(`${request.method} ${route}`)) {
          const body = Object.fromEntries(new URLSearchParams(decodeUtf8(raw)))
          refuseUnstorable(body, 'the body')
          options.checkBody?.(request, body)
          return body
        }
        throw new ProblemError('validation_failed', {
          status: 415,
          detail: `this operation takes application/json, not ${media || 'a body without Content-Type'}`,
          errors: [{ path: '', code: 'unsupported_media_type' }],
          headers: { 'Accept-Post': 'application/json' },
        })
      })
      // Never runs: the parser above answers or throws for every body. Naming Elysia's JSON parser is
      // what makes @elysiajs/openapi document request bodies; it lists media types only of named parsers.
      .onParse({ as: 'global' }, ['json'] as never)
      .onError({ as: 'global' }, ({ code, error, request, path }) => {
        const state = requestState(request, deps)
        const problem = toProblem(code, error, request, path, options)
        if (isDatabaseBusy(problem.internal)) state.busy = true
        else if (problem.status >= 500) deps.log.error('request failed', { request_id: state.id, route: state.route ?? null, error: problem.internal ?? error })
        return problemResponse(problem, deps.config.publicUrl, state.id, path)
      })
  )
}

export function problemResponse(problem: ProblemError, publicUrl: string, requestId: string, instance?: string): Response {
  const doc = toProblemDocument(problem, { publicUrl, requestId, instance })
  return new Response(JSON.stringify(doc), {
    status: problem.status,
    headers: {
      'content-type': 'application/problem+json',
      'cache-control': 'no-store',
      'x-request-id': requestId,
      ...problem.headers,
    },
  })
}

function toProblem(code: string | number, error: unknown, request: Request, path: string, options: PlatformOptions): ProblemError {
  if (error instanceof ProblemError) return error
  if (error instanceof DomainError) return fromDomainError(error)
  switch (code) {
    case 'VALIDATION':
      return validationProblem(error, request)
    case 'PARSE': {
      // Elysia wraps whatever our parse hook threw in a ParseError. The hook turns every real parse
      // failure (413, 415, bad JSON, too deep) into a ProblemError; anything else failed around it
      // (authentication reading a busy database, say) and is mapped as itself, never as bad JSON.
      const cause = (error as Error).cause
      if (cause instanceof ProblemError) return cause
      if (cause instanceof DomainError) return fromDomainError(cause)
      return internalProblem(cause ?? error)
    }
    case 'NOT_FOUND': {
      const allowed = options.allowedMethods(path)
      if (allowed.length > 0 && !allowed.includes(request.method))
        return new ProblemError('not_found', {
          status: 405,
          detail: `${request.method} is not allowed on this path; allowed: ${allowed.join(', ')}`,
          headers: { Allow: allowed.join(', ') },
        })
      return problems.notFound(`no route ${request.method} ${path}`)
    }
    case 'INVALID_COOKIE_SIGNATURE':
      return new ProblemError('unauthorized')
    default:
      return internalProblem(error)
  }
}

/**
 * The one place a service's DomainError becomes HTTP: the problem family gives the status, the
 * facts give the headers (Retry-After, ETag) and the 412 variant of a version conflict.
 */
function fromDomainError(e: DomainError): ProblemError {
  const headers: Record<string, string> = {}
  if (e.facts.retryAfterSeconds !== undefined) headers['Retry-After'] = String(Math.max(1, Math.ceil(e.facts.retryAfterSeconds)))
  if (e.facts.currentVersion !== undefined) headers.ETag = e.facts.currentVersion
  return new ProblemError(e.problem, {
    detail: e.message,
    errors: e.facts.fields,
    status: e.facts.preconditionFailed ? 412 : undefined,
    headers,
    internal: e.facts.internal ?? { code: e.code },
  })
}

/**
 * A failure that is not the caller's: a database busy past the retries (another process holds the
 * write lock) is 503 with Retry-After; anything else is an opaque 500 with the request id.
 */
export function internalProblem(error: unknown): ProblemError {
  if (isDatabaseBusy(error))
    return new ProblemError('temporarily_unavailable', {
      detail: 'the database is busy; retry shortly',
      headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) },
      internal: error,
    })
  return new ProblemError('temporarily_unavailable', { status: 500, detail: 'internal error', internal: error })
}

const FIELD_CODES: Partial<Record<ValueErrorType, string>> = {
  [ValueErrorType.ObjectRequiredProperty]: 'required',
  [ValueErrorType.ObjectAdditionalProperties]: 'unknown_field',
  [ValueErrorType.StringMaxLength]: 'too_long',
  [ValueErrorType.StringMinLength]: 'too_short',
  [ValueErrorType.StringPattern]: 'pattern',
  [ValueErrorType.StringFormat]: 'format',
  [ValueErrorType.NumberMinimum]: 'too_small',
  [ValueErrorType.NumberExclusiveMinimum]: 'too_small',
  [ValueErrorType.NumberMaximum]: 'too_large',
  [ValueErrorType.NumberExclusiveMaximum]: 'too_large',
  [ValueErrorType.IntegerMinimum]: 'too_small',
  [ValueErrorType.IntegerExclusiveMinimum]: 'too_small',
  [ValueErrorType.IntegerMaximum]: 'too_large',
  [ValueErrorType.IntegerExclusiveMaximum]: 'too_large',
  [ValueErrorType.ArrayMaxItems]: 'too_many_items',
  [ValueErrorType.ArrayMinItems]: 'too_few_items',
  [ValueErrorType.ArrayUniqueItems]: 'duplicate_items',
  [ValueErrorType.ObjectMinProperties]: 'empty',
  [ValueErrorType.ObjectMaxProperties]: 'too_many_properties',
  [ValueErrorType.Union]: 'invalid_value',
  [ValueErrorType.Literal]: 'invalid_value',
}

/** TypeBox errors as JSON Pointers (under `prefix`) with short codes, one per field, at most 100. */
export function valueErrorsToFields(errors: Iterable<ValueError>, prefix = ''): FieldError[] {
  const seen = new Set<string>()
  const out: FieldError[] = []
  for (const found of errors) {
    const e = innermost(found)
    if (seen.has(e.path)) continue
    seen.add(e.path)
    out.push({ path: `${prefix}${e.path}`, code: FIELD_CODES[e.type] ?? 'invalid_type' })
    if (out.length >= 100) break
  }
  return out
}

/**
 * A union's error names only the union ("expected one of"); the alternative that got furthest
 * names the field that is wrong. A query array is a union of one item and an array of them, so
 * `?metric=a&metric=B` points at /metric/1 (pattern), not at /metric.
 */
function innermost(e: ValueError, depth = 0): ValueError {
  if (e.type !== ValueErrorType.Union || !Array.isArray(e.errors) || depth > 8) return e
  let best = e
  let bestRank = -1
  for (const alternative of e.errors) {
    const first = alternative.First()
    if (!first) continue
    const inner = innermost(first, depth + 1)
    // Deeper wins; at the same depth, an alternative of the value's own kind (too many items) wins over "not a string".
    const rank = inner.path.length * 2 + (WRONG_KIND.has(inner.type) ? 0 : 1)
    if (rank > bestRank && (inner.path.length > e.path.length || !WRONG_KIND.has(inner.type))) {
      best = inner
      bestRank = rank
    }
  }
  return best
}

const WRONG_KIND = new Set([
  ValueErrorType.Array,
  ValueErrorType.Boolean,
  ValueErrorType.Integer,
  ValueErrorType.Null,
  ValueErrorType.Number,
  ValueErrorType.Object,
  ValueErrorType.String,
  ValueErrorType.Undefined,
  ValueErrorType.Union,
])

/**
 * Every validation failure of a request as a 422 problem document, whatever raised it, and never a
 * 500 (issue 34): Elysia's ValidationError for a body, query, path or headers (its validator a
 * compiled TypeCheck, a plain schema, or none); its "property" error from coercing a query or path
 * value; a TypeBox error thrown while decoding a coerced value (a query array or union whose item
 * fails: TransformDecodeCheckError, TransformDecodeError). An answer that fails its own schema
 * (ValidationError "response", TransformEncode*) and any other TypeBox error are ours, a 500.
 * Field errors that cannot be mapped point at the root rather than fail the mapping.
 */
function validationProblem(error: unknown, request: Request): ProblemError {
  if (error instanceof TransformEncodeCheckError || error instanceof TransformEncodeError) return internalProblem(error)
  if (error instanceof ValidationError && error.type === 'response') return internalProblem(error.message)
  // Any other TypeBox error (Elysia files every one under VALIDATION) came from our own code, not from the request.
  if (!(error instanceof ValidationError || error instanceof TransformDecodeCheckError || error instanceof TransformDecodeError)) return internalProblem(error)
  let fields: FieldError[] = []
  let part = 'request'
  try {
    if (error instanceof ValidationError) {
      if (error.type === 'property') fields = located(request, error.value, error.valueError)
      else {
        part = `request ${error.type}`
        fields = valueErrorsToFields(errorsOf(error))
      }
    } else if (error instanceof TransformDecodeCheckError) fields = located(request, error.value, error.error)
    else if (error instanceof TransformDecodeError) {
      const inner = error.error
      fields = inner instanceof ValidationError ? located(request, inner.value, inner.valueError) : located(request, error.value, undefined, error.path)
    }
  } catch {
    fields = []
  }
  return problems.validation(fields.length ? fields : [{ path: '', code: 'invalid' }], `the ${part} did not pass validation`)
}

/** The TypeBox errors of an Elysia ValidationError, from whatever validator it carries. */
function errorsOf(v: ValidationError): Iterable<ValueError> {
  const validator = v.validator as unknown
  if (validator && typeof validator === 'object') {
    if ('Errors' in validator && typeof validator.Errors === 'function') return (validator.Errors as (value: unknown) => Iterable<ValueError>)(v.value)
    if (Kind in validator) return Value.Errors(validator as TSchema, v.value)
  }
  return v.valueError ? [v.valueError] : []
}

/**
 * Elysia coerces query and path parameters ("0" → 0, "a" → ["a"]) in transforms whose failure
 * names only the value, not the parameter that held it. The parameter is found again by its text
 * in the URL (every value of a repeated query parameter); the error's own path, relative to that
 * value, follows (/metric + /1). When no parameter, or more than one, holds the value, the pointer
 * stays at the root.
 */
function located(request: Request, value: unknown, valueError: ValueError | undefined, subPath = ''): FieldError[] {
  const e = valueError && innermost(valueError)
  const code = (e && FIELD_CODES[e.type]) ?? 'invalid_type'
  const texts = (Array.isArray(value) ? value : [value]).map((x) => String(x))
  const holds = (raws: string[]) =>
    raws.length === texts.length &&
    raws.every((raw, i) => raw === texts[i] || (raw.trim() !== '' && texts[i]!.trim() !== '' && Number(raw) === Number(texts[i])))
  const names = new Set<string>()
  const url = new URL(request.url)
  for (const name of new Set(url.searchParams.keys())) if (holds(url.searchParams.getAll(name))) names.add(name)
  const template = requestState(request).route?.split('/') ?? []
  const segments = url.pathname.split('/')
  template.forEach((seg, i) => {
    if (!seg.startsWith(':') || segments[i] === undefined) return
    let raw = segments[i]!
    try {
      raw = decodeURIComponent(raw)
    } catch {}
    if (holds([raw])) names.add(seg.slice(1))
  })
  if (names.size !== 1) return [{ path: '', code }]
  const inner = Array.isArray(value) ? (e?.path ?? subPath) : ''
  return [{ path: `/${escapePointer([...names][0]!)}${inner}`, code }]
}

const escapePointer = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1')

/**
 * The one check that keeps text no database stores out of every request (issue 36): U+0000 and
 * unpaired surrogates (src/platform/storable.ts) in a body (JSON or form, values and keys), a query
 * string or a path parameter answer 422 `invalid_character` at the offending pointer, on SQLite and
 * PostgreSQL alike, before validation, the allowlist or any query sees them.
 */
function refuseUnstorable(value: unknown, where: string): void {
  const pointer = unstorablePointer(value)
  if (pointer !== null)
    throw problems.field(pointer, 'invalid_character', `${where} holds a character no text can store: U+0000 (NUL) or an unpaired UTF-16 surrogate`)
}

function tooLarge(limit: number): ProblemError {
  return new ProblemError('payload_too_large', { detail: `the request body is larger than ${limit} bytes` })
}

/** Reads the body, refusing more than `limit` bytes even when no Content-Length was sent. */
async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  if (!request.body) return new Uint8Array(0)
  const chunks: Uint8Array[] = []
  let total = 0
  const reader = request.body.getReader()
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel().catch(() => {})
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function decodeUtf8(raw: Uint8Array): string {
  try {
    return utf8.decode(raw)
  } catch {
    throw problems.field('', 'invalid_json', 'the request body is not valid UTF-8')
  }
}

function parseJsonText(text: string): unknown {
  // Before parsing: a deeply nested body is refused in one linear pass, never recursed into.
  const tooDeep = excessiveDepthPointer(text)
  if (tooDeep !== null) throw problems.field(tooDeep, 'too_deep', `JSON bodies may nest objects and arrays at most ${MAX_JSON_DEPTH} levels deep`)
  try {
    return JSON.parse(text)
  } catch {
    throw problems.field('', 'invalid_json', 'the request body is not valid JSON')
  }
}

/** Matches concrete paths against the registered route templates, for 405 and its Allow header. */
export function createMethodIndex(routes: { method: string; path: string }[]): (path: string) => string[] {
  const templates = new Map<string, { re: RegExp; methods: Set<string> }>()
  for (const r of routes) {
    if (r.method === 'ALL' || r.method === 'WS') continue
    let entry = templates.get(r.path)
    if (!entry) {
      const pattern = r.path
        .split('/')
        .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg === '*' ? '.*' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
        .join('/')
      entry = { re: new RegExp(`^${pattern}/?$`), methods: new Set() }
      templates.set(r.path, entry)
    }
    entry.methods.add(r.method)
    if (r.method === 'GET') entry.methods.add('HEAD')
  }
  return (path: string) => {
    const out = new Set<string>()
    for (const { re, methods } of templates.values()) if (re.test(path)) for (const m of methods) out.add(m)
    return [...out].sort()
  }
}
