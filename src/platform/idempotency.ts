import { and, eq, lt, lte, or, sql } from 'drizzle-orm'
import { idempotencyKeys } from '../../db/schema/platform'
import { changesOf, onRollback, preparedQuery, relaxedDb, transactionWatchers, withTransaction, type TransactionWatcher, type Tx } from '../../db/client'
import { perDeps, type Deps } from './context'
import { ProblemError, problems } from './problem'
import { open, seal, sha256Hex } from './secrets'
import { requestState, type HeldKey } from './http'

/**
 * Idempotency-Key (docs/conventions.md "Idempotency-Key"). A key is scoped by (tenant, operation,
 * key), kept at least 24 h, and replayed only to the principal that made the request.
 *
 * - First request: the key is looked up (a read) and held in this process while the request runs;
 *   the request's first write transaction inserts it as "executed", in that same transaction, so
 *   the claim costs no commit of its own and a crash after that commit never runs the request twice.
 * - Same key and body after completion: the stored status, headers and body are replayed.
 * - Same key, another body: 409 idempotency_conflict. Same key while the first runs: 409 conflict
 *   with Retry-After, and the operation never runs twice (in this process: the hold; across
 *   processes: the insert of the second one's first write meets the first's row and rolls back).
 * - Nothing is stored for a request refused before it wrote (validation, auth, rate limit: 401, 403,
 *   422, 429) or that failed unexpectedly (5xx) before its first write: a corrected retry proceeds.
 * - A request that wrote and whose answer was then lost (the process died) answers 409: its outcome
 *   is unknown, so it is not run again. A request that died before writing left nothing behind.
 * Stored responses are sealed with AES-GCM, since some carry a secret shown once.
 */

/**
 * The idempotency state of the request being handled, across its async hooks and handler, and the
 * watcher of its write transactions: its first top-level transaction with a held key writes the
 * key, "executed", in that same transaction.
 */
export class RequestIdempotency implements TransactionWatcher {
  claim?: HeldKey
  /** Top-level write transactions this request began (src/server.ts retries a busy one only at 0). */
  beganCount = 0

  constructor(private readonly deps: Deps) {}

  async began(tx: Tx): Promise<void> {
    this.beganCount++
    // A transaction that rolls back wrote nothing: on PostgreSQL that is how a row lock held
    // elsewhere shows (SQLite refuses BEGIN IMMEDIATE instead), and how a transaction that lost a
    // serialization conflict ends before it runs again. Neither counts, nor writes the key.
    onRollback(tx, () => {
      this.beganCount--
    })
    const held = this.claim
    if (!held || held.executed) return
    held.executed = true
    onRollback(tx, () => {
      held.executed = false
    })
    await writeExecuted(this.deps, tx, held)
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

/** Keys held by requests running in this process, with the fingerprint of the request holding each. */
const held = perDeps(() => new Map<string, string>())
const heldId = (k: { scope: string; operation: string; key: string }) => `${k.scope}\n${k.operation}\n${k.key}`

const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/
const LOCK_SECONDS = 60
const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'cache-control']
/** Outcomes that mean "the operation did not run": the key is released, not stored. */
const NOT_STORED = new Set([401, 403, 422, 429])

export type Claim = { kind: 'claimed'; claim: HeldKey } | { kind: 'replay'; status: number; headers: Record<string, string>; body: string }

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

/** The key's row, its parts given when the prepared statement runs. */
const keyPlaceholders = () =>
  and(
    eq(idempotencyKeys.scope, sql.placeholder('scope')),
    eq(idempotencyKeys.operation, sql.placeholder('operation')),
    eq(idempotencyKeys.key, sql.placeholder('key')),
  )

const keyRow = preparedQuery((db) => db.select().from(idempotencyKeys).where(keyPlaceholders()).prepare())

/** The two writes every request with a new key makes, built once (preparedQuery). */
const insertExecuted = preparedQuery((db) =>
  db
    .insert(idempotencyKeys)
    .values({
      scope: sql.placeholder('scope'),
      operation: sql.placeholder('operation'),
      key: sql.placeholder('key'),
      fingerprint: sql.placeholder('fingerprint'),
      state: 'executed',
      lockedUntil: sql.placeholder('lockedUntil'),
      responseStatus: null,
      responseBox: null,
      createdAt: sql.placeholder('createdAt'),
    })
    .onConflictDoNothing()
    .prepare(),
)

const storeAnswer = preparedQuery((db) =>
  db
    .update(idempotencyKeys)
    .set({ state: 'completed', responseStatus: sql`${sql.placeholder('status')}`, responseBox: sql`${sql.placeholder('box')}` })
    .where(keyPlaceholders())
    .prepare(),
)

const whereKey = (k: { scope: string; operation: string; key: string }) =>
  and(eq(idempotencyKeys.scope, k.scope), eq(idempotencyKeys.operation, k.operation), eq(idempotencyKeys.key, k.key))

function stillRunning(): ProblemError {
  return new ProblemError('conflict', {
    detail: 'a request with this Idempotency-Key is still being processed; retry later',
    headers: { 'Retry-After': '1' },
  })
}

/**
 * Looks the key up and, when the request is to run, holds it in this process until finishKey.
 * Writes nothing: the request's first write transaction writes the key (RequestIdempotency).
 */
export async function claimKey(deps: Deps, scope: string, operation: string, key: string, print: string): Promise<Claim> {
  const now = deps.clock.nowUs()
  const retentionUs = deps.config.idempotencyRetentionSeconds * 1_000_000
  const running = held(deps)
  const id = heldId({ scope, operation, key })
  const holder = running.get(id)
  if (holder !== undefined) {
    if (holder !== print)
      throw new ProblemError('idempotency_conflict', {
        detail: 'this Idempotency-Key was used with a different request, or by another caller; use a new key for a new request',
      })
    throw stillRunning()
  }
  // Held before the read, so a second request with this key arriving while it runs meets the hold.
  running.set(id, print)
  try {
    const claim = await readClaim(deps, { scope, operation, key, print, now, retentionUs })
    if (claim.kind !== 'claimed') running.delete(id)
    return claim
  } catch (e) {
    running.delete(id)
    throw e
  }
}

async function readClaim(
  deps: Deps,
  { scope, operation, key, print, now, retentionUs }: { scope: string; operation: string; key: string; print: string; now: number; retentionUs: number },
): Promise<Claim> {
  const row = (await keyRow(deps.db).get({ scope, operation, key })) as typeof idempotencyKeys.$inferSelect | undefined
  let replace = false
  if (row && row.createdAt < now - retentionUs) {
    replace = true // past retention the key is forgotten: the request is new
  } else if (row) {
    if (row.fingerprint !== print)
      throw new ProblemError('idempotency_conflict', {
        detail: 'this Idempotency-Key was used with a different request, or by another caller; use a new key for a new request',
      })
    if (row.state === 'completed' && row.responseBox) {
      const stored = JSON.parse(open(deps.keys.idempotency, row.responseBox, aad(scope, operation, key)).toString()) as Stored
      return { kind: 'replay', status: row.responseStatus!, headers: stored.headers, body: stored.body }
    }
    if (row.lockedUntil > now) {
      const wait = Math.max(1, Math.ceil((row.lockedUntil - now) / 1_000_000))
      throw new ProblemError('conflict', {
        detail: 'a request with this Idempotency-Key is still being processed; retry later',
        headers: { 'Retry-After': String(Math.min(wait, 5)) },
      })
    }
    if (row.state === 'executed')
      throw new ProblemError('conflict', {
        detail:
          'the first request with this Idempotency-Key made its change, but its answer was lost when the service stopped; read the resource to see the outcome, and use a new key for a new request',
      })
    replace = true // the claim of a process that died before it wrote (an older build's row): taken over
  }
  return { kind: 'claimed', claim: { scope, operation, key, fingerprint: print, replace, executed: false } }
}

/** The first write of a request holding `k`: the key row, "executed", in the same transaction. */
async function writeExecuted(deps: Deps, tx: Tx, k: HeldKey): Promise<void> {
  const now = deps.clock.nowUs()
  const fields = {
    fingerprint: k.fingerprint,
    state: 'executed' as const,
    lockedUntil: now + LOCK_SECONDS * 1_000_000,
    responseStatus: null,
    responseBox: null,
    createdAt: now,
  }
  if (k.replace) {
    // Only the row claimKey saw may be replaced: one past retention, or a dead process's claim.
    const cutoff = now - deps.config.idempotencyRetentionSeconds * 1_000_000
    const taken = await tx
      .update(idempotencyKeys)
      .set(fields)
      .where(and(whereKey(k), or(lt(idempotencyKeys.createdAt, cutoff), and(eq(idempotencyKeys.state, 'in_progress'), lte(idempotencyKeys.lockedUntil, now)))))
      .run()
    if (changesOf(taken) === 1) return
  }
  const inserted = await insertExecuted(tx).run({
    scope: k.scope,
    operation: k.operation,
    key: k.key,
    fingerprint: k.fingerprint,
    lockedUntil: fields.lockedUntil,
    createdAt: now,
  })
  // Another process's request with this key wrote first: this one rolls back and says so.
  if (changesOf(inserted) !== 1) throw stillRunning()
}

/** Stores the outcome of a held key, or lets it go when the outcome must not be replayed. */
export async function finishKey(deps: Deps, claim: HeldKey, response: Response): Promise<void> {
  try {
    // Nothing was written: nothing is kept, so a corrected retry runs. Once the request wrote, its
    // answer is kept whatever it is, since running it again is not safe.
    if (!claim.executed && (response.status >= 500 || NOT_STORED.has(response.status))) return
    const body = await response.clone().text()
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const v = response.headers.get(name)
      if (v !== null) headers[name] = v
    }
    const box = seal(deps.keys.idempotency, JSON.stringify({ headers, body } satisfies Stored), aad(claim.scope, claim.operation, claim.key))
    const answer = { state: 'completed' as const, responseStatus: response.status, responseBox: box }
    // The usual case, the request wrote and its key row is there: one statement, a transaction of
    // its own (on PostgreSQL one round trip instead of BEGIN, UPDATE, COMMIT), and a relaxed commit
    // (db/client.ts relaxedDb): lost at a crash, the key is left "executed" without its answer, as
    // a crash right after the request's own commit would leave it.
    const stored = { status: answer.responseStatus, box, scope: claim.scope, operation: claim.operation, key: claim.key }
    if (claim.executed && changesOf(await storeAnswer(relaxedDb(deps.db)).run(stored)) === 1) return
    await withTransaction(deps.db, async (tx) => {
      // Nothing of the request was written (it never wrote, or its write rolled back with the key).
      if (response.status >= 500 || NOT_STORED.has(response.status)) return
      // An answer without a write (404, 409, …): the row is written now, with its answer.
      const now = deps.clock.nowUs()
      const row = { fingerprint: claim.fingerprint, lockedUntil: now, createdAt: now, ...answer }
      if (claim.replace) await tx.delete(idempotencyKeys).where(whereKey(claim)).run()
      await tx
        .insert(idempotencyKeys)
        .values({ scope: claim.scope, operation: claim.operation, key: claim.key, ...row })
        .onConflictDoNothing()
        .run()
    })
  } finally {
    held(deps).delete(heldId(claim))
  }
}

/** Lets a held key go without storing anything (an attempt run again after a busy database). */
export function releaseKey(deps: Deps, claim: HeldKey): void {
  held(deps).delete(heldId(claim))
}

function replayResponse(claim: Extract<Claim, { kind: 'replay' }>, requestId: string): Response {
  return new Response(claim.body, {
    status: claim.status,
    headers: { ...claim.headers, 'idempotent-replayed': 'true', 'x-request-id': requestId },
  })
}

/** Deletes keys past retention; the `idempotency.gc` job. Returns how many were removed. */
export async function collectExpiredKeys(deps: Deps): Promise<number> {
  const cutoff = deps.clock.nowUs() - deps.config.idempotencyRetentionSeconds * 1_000_000
  const result = await withTransaction(deps.db, (tx) => tx.delete(idempotencyKeys).where(lt(idempotencyKeys.createdAt, cutoff)).run())
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
async function idempotencyBeforeHandle(deps: Deps, ctx: { request: Request; body: unknown; route: string }): Promise<Response | undefined> {
  const key = ctx.request.headers.get('idempotency-key')
  if (key === null) return undefined
  validateKey(key)
  const state = requestState(ctx.request, deps)
  const scope = state.tenantId ?? 'public'
  const operation = `${ctx.request.method} ${ctx.route}`
  const principal = state.actor ? `${state.actor.kind}:${state.actor.id}` : 'anonymous'
  const claim = await claimKey(deps, scope, operation, key, fingerprint(ctx.request.method, ctx.route, ctx.body, principal))
  if (claim.kind === 'replay') return replayResponse(claim, state.id)
  state.idempotency = claim.claim
  const store = currentRequest()
  if (store) store.claim = claim.claim
  return undefined
}

/** The beforeHandle of a route that takes Idempotency-Key: `beforeHandle: idempotent(deps)`. */
export function idempotent(deps: Deps) {
  return async ({ request, body, route }: { request: Request; body: unknown; route: string }) =>
    (await idempotencyBeforeHandle(deps, { request, body, route })) as never
}
