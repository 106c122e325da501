import { and, eq, lt } from 'drizzle-orm'
import { idempotencyKeys } from '../../db/schema'
import { changesOf, transactionWatchers, withTransaction, type TransactionWatcher, type Tx } from '../../db/client'
import type { Deps } from './context'
import { ProblemError, problems } from './problem'
import { open, seal, sha256Hex } from './secrets'
import { requestState } from './http'

/**
 * Idempotency-Key (docs/conventions.md "Idempotency-Key"). A key is scoped by (tenant, operation,
 * key), kept at least 24 h, and replayed only to the principal that made the request.
 *
 * - First request: claims the key (in_progress) in its own BEGIN IMMEDIATE transaction, runs.
 * - Same key and body after completion: the stored status, headers and body are replayed.
 * - Same key, another body: 409 idempotency_conflict. Same key while the first runs: 409 conflict
 *   with Retry-After, and the operation never runs twice.
 * - Nothing is stored for a request refused before it ran (validation, auth, rate limit: 401, 403,
 *   422, 429) or that failed unexpectedly (5xx): the key is released and a corrected retry proceeds.
 * - The request's first write transaction marks the key "executed" in that same transaction. A
 *   claim left by a crashed process is taken over once its lock expires (LOCK_SECONDS) only if it
 *   never got that far; one that did answers 409 (its outcome is unknown: the write happened but the
 *   answer was lost), so a request never runs twice.
 * Stored responses are sealed with AES-GCM, since some carry a secret shown once.
 */

/**
 * The idempotency state of the request being handled, across its async hooks and handler, and the
 * watcher of its write transactions: its first top-level transaction with a claimed key marks the
 * key executed in that same transaction.
 */
export class RequestIdempotency implements TransactionWatcher {
  claim?: { scope: string; operation: string; key: string }
  executed = false
  /** Top-level write transactions this request began (src/server.ts retries a busy one only at 0). */
  beganCount = 0

  began(tx: Tx): void {
    this.beganCount++
    if (!this.claim || this.executed) return
    this.executed = true
    const { scope, operation, key } = this.claim
    tx.update(idempotencyKeys)
      .set({ state: 'executed' })
      .where(
        and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.operation, operation), eq(idempotencyKeys.key, key), eq(idempotencyKeys.state, 'in_progress')),
      )
      .run()
  }
}

/** Runs one attempt of a request with its own idempotency state and transaction watcher. */
export function runWithIdempotency<T>(scope: RequestIdempotency, fn: () => T): T {
  return transactionWatchers.run(scope, fn)
}

function currentRequest(): RequestIdempotency | undefined {
  const store = transactionWatchers.getStore()
  return store instanceof RequestIdempotency ? store : undefined
}

const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/
const LOCK_SECONDS = 60
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'cache-control']
/** Outcomes that mean "the operation did not run": the key is released, not stored. */
const NOT_STORED = new Set([401, 403, 422, 429])

export type Claim = { kind: 'claimed' } | { kind: 'replay'; status: number; headers: Record<string, string>; body: string }

type Stored = { headers: Record<string, string>; body: string }

export function validateKey(key: string): void {
  if (!KEY_PATTERN.test(key))
    throw problems.field(
      '/idempotency-key',
      key.length > 128 ? 'too_long' : 'pattern',
      'Idempotency-Key must be 1 to 128 printable ASCII characters (0x21-0x7E)',
    )
}

/**
 * SHA-256 of the principal, method, route template and the body in canonical JSON (keys sorted at
 * every depth). The principal (the member behind a session, the token, the agent) is part of it, so
 * a stored answer is replayed only to whoever made the request: anyone else sending the same key
 * and body gets 409 idempotency_conflict, never the first caller's answer (a token shown once).
 */
export function fingerprint(method: string, route: string, body: unknown, principal = 'anonymous'): string {
  return sha256Hex(`${principal}\n${method} ${route}\n${canonicalJson(body ?? null)}`)
}

/**
 * JSON with object keys sorted at every depth. Iterative, so no body can overflow the stack here
 * (bodies are depth-limited at parsing as well, src/platform/json-depth.ts).
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = []
  // Work items: a value to write, or a literal piece of punctuation.
  const stack: ({ v: unknown } | string)[] = [{ v: value }]
  while (stack.length) {
    const item = stack.pop()!
    if (typeof item === 'string') {
      out.push(item)
      continue
    }
    const v = item.v
    if (v === null || typeof v !== 'object' || typeof (v as { toJSON?: unknown }).toJSON === 'function') {
      out.push(JSON.stringify(v) ?? 'null')
    } else if (Array.isArray(v)) {
      const parts: ({ v: unknown } | string)[] = ['[']
      v.forEach((x, i) => {
        if (i) parts.push(',')
        parts.push({ v: x === undefined ? null : x })
      })
      parts.push(']')
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]!)
    } else {
      const keys = Object.keys(v)
        .sort()
        .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      const parts: ({ v: unknown } | string)[] = ['{']
      keys.forEach((k, i) => {
        parts.push(`${i ? ',' : ''}${JSON.stringify(k)}:`, { v: (v as Record<string, unknown>)[k] })
      })
      parts.push('}')
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]!)
    }
  }
  return out.join('')
}

export function claimKey(deps: Deps, scope: string, operation: string, key: string, print: string): Claim {
  const now = deps.clock.nowUs()
  const retentionUs = deps.config.idempotencyRetentionSeconds * 1_000_000
  return withTransaction(deps.db, (tx) => {
    const where = and(eq(idempotencyKeys.scope, scope), eq(idempotencyKeys.operation, operation), eq(idempotencyKeys.key, key))
    const row = tx.select().from(idempotencyKeys).where(where).get()
    const fresh = {
      scope,
      operation,
      key,
      fingerprint: print,
      state: 'in_progress' as const,
      lockedUntil: now + LOCK_SECONDS * 1_000_000,
      responseStatus: null,
      responseBox: null,
      createdAt: now,
    }
    if (!row) {
      tx.insert(idempotencyKeys).values(fresh).run()
      return { kind: 'claimed' }
    }
    if (row.createdAt < now - retentionUs) {
      // Past retention the key is forgotten: the request is new.
      tx.update(idempotencyKeys).set(fresh).where(where).run()
      return { kind: 'claimed' }
    }
    if (row.fingerprint !== print)
      throw new ProblemError('idempotency_conflict', {
        detail: 'this Idempotency-Key was used with a different request, or by another caller; use a new key for a new request',
      })
    if (row.state === 'completed' && row.responseBox) {
      const stored = JSON.parse(open(deps.keys.idempotency, row.responseBox, aad(scope, operation, key)).toString()) as Stored
      return { kind: 'replay', status: row.responseStatus!, headers: stored.headers, body: stored.body }
    }
    if (row.lockedUntil > now || row.state === 'executed') {
      if (row.lockedUntil <= now)
        throw new ProblemError('conflict', {
          detail:
            'the first request with this Idempotency-Key made its change, but its answer was lost when the service stopped; read the resource to see the outcome, and use a new key for a new request',
        })
      const wait = Math.max(1, Math.ceil((row.lockedUntil - now) / 1_000_000))
      throw new ProblemError('conflict', {
        detail: 'a request with this Idempotency-Key is still being processed; retry later',
        headers: { 'Retry-After': String(Math.min(wait, 5)) },
      })
    }
    // The claim of a process that crashed mid-request: take it over.
    tx.update(idempotencyKeys).set({ lockedUntil: fresh.lockedUntil }).where(where).run()
    return { kind: 'claimed' }
  })
}

/** Stores the outcome of a claimed request, or releases the key when the outcome must not be replayed. */
export async function finishKey(deps: Deps, claim: { scope: string; operation: string; key: string }, response: Response): Promise<void> {
  const where = and(eq(idempotencyKeys.scope, claim.scope), eq(idempotencyKeys.operation, claim.operation), eq(idempotencyKeys.key, claim.key))
  // Nothing was written: the key is released so a corrected retry runs. Once the request wrote
  // (state executed) its answer is kept whatever it is, since running it again is not safe.
  if (response.status >= 500 || NOT_STORED.has(response.status)) {
    const released = withTransaction(deps.db, (tx) =>
      tx
        .delete(idempotencyKeys)
        .where(and(where, eq(idempotencyKeys.state, 'in_progress')))
        .run(),
    )
    if (changesOf(released) === 1) return
  }
  const body = await response.clone().text()
  const headers: Record<string, string> = {}
  for (const name of REPLAYED_HEADERS) {
    const v = response.headers.get(name)
    if (v !== null) headers[name] = v
  }
  const box = seal(deps.keys.idempotency, JSON.stringify({ headers, body } satisfies Stored), aad(claim.scope, claim.operation, claim.key))
  withTransaction(deps.db, (tx) => tx.update(idempotencyKeys).set({ state: 'completed', responseStatus: response.status, responseBox: box }).where(where).run())
}

function replayResponse(claim: Extract<Claim, { kind: 'replay' }>, requestId: string): Response {
  return new Response(claim.body, {
    status: claim.status,
    headers: { ...claim.headers, 'idempotent-replayed': 'true', 'x-request-id': requestId },
  })
}

/** Deletes keys past retention; the `idempotency.gc` job. Returns how many were removed. */
export function collectExpiredKeys(deps: Deps): number {
  const cutoff = deps.clock.nowUs() - deps.config.idempotencyRetentionSeconds * 1_000_000
  const result = withTransaction(deps.db, (tx) => tx.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, cutoff)).run())
  return changesOf(result)
}

function aad(scope: string, operation: string, key: string): string {
  return `idempotency\n${scope}\n${operation}\n${key}`
}

/**
 * The route side: call from a route's beforeHandle after authentication. Returns a replayed
 * Response to short-circuit with, or undefined when the handler should run (the server wrapper then
 * stores or releases the key from the final response).
 */
function idempotencyBeforeHandle(deps: Deps, ctx: { request: Request; body: unknown; route: string }): Response | undefined {
  const key = ctx.request.headers.get('idempotency-key')
  if (key === null) return undefined
  validateKey(key)
  const state = requestState(ctx.request, deps)
  const scope = state.tenantId ?? 'public'
  const operation = `${ctx.request.method} ${ctx.route}`
  const principal = state.actor ? `${state.actor.kind}:${state.actor.id}` : 'anonymous'
  const claim = claimKey(deps, scope, operation, key, fingerprint(ctx.request.method, ctx.route, ctx.body, principal))
  if (claim.kind === 'replay') return replayResponse(claim, state.id)
  state.idempotency = { scope, operation, key }
  const store = currentRequest()
  if (store) store.claim = state.idempotency
  return undefined
}

/** The beforeHandle of a route that takes Idempotency-Key: `beforeHandle: idempotent(deps)`. */
export function idempotent(deps: Deps) {
  return ({ request, body, route }: { request: Request; body: unknown; route: string }) => idempotencyBeforeHandle(deps, { request, body, route }) as never
}
