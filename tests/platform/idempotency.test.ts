import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import fc from 'fast-check'
import { jobs } from '../../jobs'
import {
  canonicalJson,
  claimKey,
  collectExpiredKeys,
  finishKey,
  fingerprint,
  RequestIdempotency,
  runWithIdempotency,
  validateKey,
} from '../../src/platform/idempotency'
import { withTransaction } from '../../db/client'
import { serviceSettings } from '../../db/schema'
import { JobRunner } from '../../src/platform/jobs'
import { problemFrom, problemFromAsync } from './fixtures/problem'
import { tempDeps, type TempDeps } from './fixtures/temp-deps'

let t: TempDeps
beforeEach(async () => {
  t = await tempDeps()
})
afterEach(() => t.close())

const OP = 'POST /api/v1/commands'
const TENANT_A = '0190a0b0-0000-7000-8000-00000000000a'
const TENANT_B = '0190a0b0-0000-7000-8000-00000000000b'
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-other': 'dropped' } })
/** claimKey's answer when the request is to run: the key it holds. */
const held = (c: Awaited<ReturnType<typeof claimKey>>) => {
  if (c.kind !== 'claimed') throw new Error(`expected a claim, got ${c.kind}`)
  return c.claim
}
const keyCount = async () => ((await t.deps.db.get(sql`SELECT count(*) AS n FROM idempotency_keys`)) as { n: number }).n

describe('claimKey across tenants', () => {
  test('the same key in two tenants is two independent requests that never see each other', async () => {
    const printA = fingerprint('POST', OP, { server_id: 'a', type: 'reboot' })
    const printB = fingerprint('POST', OP, { server_id: 'b', type: 'stop' })
    const a = held(await claimKey(t.deps, TENANT_A, OP, 'key-1', printA))
    // B's different body is no conflict with A's, and B is not told A's request is in flight.
    const b = held(await claimKey(t.deps, TENANT_B, OP, 'key-1', printB))

    await finishKey(t.deps, a, json(201, { id: 'command-of-a' }))
    const replayA = await claimKey(t.deps, TENANT_A, OP, 'key-1', printA)
    expect(replayA).toEqual({ kind: 'replay', status: 201, headers: { 'content-type': 'application/json' }, body: '{"id":"command-of-a"}' })

    // B's request is still running: B gets 409 with Retry-After, never A's stored response.
    const inFlight = await problemFromAsync(() => claimKey(t.deps, TENANT_B, OP, 'key-1', printB))
    expect(inFlight.code).toBe('conflict')
    expect(Number(inFlight.headers['Retry-After'])).toBeGreaterThanOrEqual(1)

    await finishKey(t.deps, b, json(201, { id: 'command-of-b' }))
    const replayB = await claimKey(t.deps, TENANT_B, OP, 'key-1', printB)
    expect(replayB).toEqual(expect.objectContaining({ kind: 'replay', body: '{"id":"command-of-b"}' }))
  })

  test('tenant B sending tenant A’s exact request with A’s key still runs it anew for B', async () => {
    const print = fingerprint('POST', OP, { server_id: 's', type: 'reboot' })
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, 'shared', print)), json(201, { secret: 'only for a' }))
    expect((await claimKey(t.deps, TENANT_B, OP, 'shared', print)).kind).toBe('claimed')
  })

  test('a stored response is sealed for its own scope: nothing on disk shows it', async () => {
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, 'k', 'print')), json(201, { token: 'gpuhq_pat_visible' }))
    const row = (await t.deps.db.get(sql`SELECT response_box FROM idempotency_keys`)) as { response_box: Uint8Array }
    expect(Buffer.from(row.response_box).toString('latin1')).not.toContain('gpuhq_pat_visible')
  })

  test('the same key with another body in the same tenant is an idempotency conflict', async () => {
    await claimKey(t.deps, TENANT_A, OP, 'k', fingerprint('POST', OP, { a: 1 }))
    expect((await problemFromAsync(() => claimKey(t.deps, TENANT_A, OP, 'k', fingerprint('POST', OP, { a: 2 })))).code).toBe('idempotency_conflict')
  })

  test('a refused or failed outcome releases the key so a corrected retry runs', async () => {
    for (const status of [401, 403, 422, 429, 500, 503]) {
      await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, `k${status}`, 'print')), json(status, { code: 'x' }))
      expect(await keyCount()).toBe(0)
      expect((await claimKey(t.deps, TENANT_A, OP, `k${status}`, 'other print')).kind).toBe('claimed')
    }
  })

  test('keys are 1 to 128 printable ASCII characters', () => {
    expect(() => validateKey('a')).not.toThrow()
    expect(() => validateKey('~'.repeat(128))).not.toThrow()
    for (const bad of ['', 'a'.repeat(129), 'has space', 'tab\t', 'é']) expect(problemFrom(() => validateKey(bad)).errors?.[0]?.path).toBe('/idempotency-key')
  })
})

describe('canonical JSON and fingerprints', () => {
  test('key order never matters, at any depth', () => {
    expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }))
    expect(canonicalJson({ b: 2, a: 1 })).toBe('{"a":1,"b":2}')
    expect(canonicalJson({ z: { y: [{ d: 1, c: { f: 1, e: 2 } }], x: null }, a: 'v' })).toBe('{"a":"v","z":{"x":null,"y":[{"c":{"e":2,"f":1},"d":1}]}}')
    expect(fingerprint('POST', OP, { a: 1, b: { c: 2, d: 3 } })).toBe(fingerprint('POST', OP, { b: { d: 3, c: 2 }, a: 1 }))
  })

  test('array order, values, method and route all matter', () => {
    expect(canonicalJson([1, 2])).not.toBe(canonicalJson([2, 1]))
    const print = fingerprint('POST', OP, { a: 1 })
    expect(fingerprint('POST', OP, { a: '1' })).not.toBe(print)
    expect(fingerprint('PUT', OP, { a: 1 })).not.toBe(print)
    expect(fingerprint('POST', '/api/v1/groups', { a: 1 })).not.toBe(print)
  })

  test('undefined fields are dropped as JSON drops them; an absent body is null', () => {
    expect(canonicalJson({ a: 1, b: undefined })).toBe('{"a":1}')
    expect(fingerprint('POST', OP, undefined)).toBe(fingerprint('POST', OP, null))
  })

  test('for any JSON value, reversing every key order gives the same text, which parses back to the value', () => {
    const reverseKeys = (v: unknown): unknown => {
      if (Array.isArray(v)) return v.map(reverseKeys)
      if (v === null || typeof v !== 'object') return v
      return Object.fromEntries(
        Object.keys(v)
          .reverse()
          .map((k) => [k, reverseKeys((v as Record<string, unknown>)[k])]),
      )
    }
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = canonicalJson(value)
        expect(canonicalJson(reverseKeys(value))).toBe(text)
        expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(value)))
      }),
    )
  })
})

describe('the key is written by the first write of the request, in its transaction', () => {
  const put = (key: string) => withTransaction(t.deps.db, (tx) => tx.insert(serviceSettings).values({ key, value: 'v', updatedAt: 1 }).run())
  const settings = async () => ((await t.deps.db.get(sql`SELECT count(*) AS n FROM service_settings WHERE key LIKE 'idem-%'`)) as { n: number }).n
  const state = async (key: string) =>
    ((await t.deps.db.get(sql`SELECT state FROM idempotency_keys WHERE key = ${key}`)) as { state: string } | undefined)?.state

  test('claiming writes nothing; the first write commits the key as executed with the change', async () => {
    const claim = held(await claimKey(t.deps, TENANT_A, OP, 'w1', 'print'))
    expect(await keyCount()).toBe(0)
    const request = new RequestIdempotency(t.deps)
    request.claim = claim
    await runWithIdempotency(request, () => put('idem-1'))
    expect(await state('w1')).toBe('executed')
    expect(await settings()).toBe(1)
    await finishKey(t.deps, claim, json(201, { ok: true }))
    expect(await state('w1')).toBe('completed')
  })

  test('another process wrote the key first: the write of this request rolls back with 409 conflict', async () => {
    const claim = held(await claimKey(t.deps, TENANT_A, OP, 'w2', 'print'))
    // Another process's request with the same key got to its first write meanwhile.
    await t.deps.db.run(
      sql`INSERT INTO idempotency_keys (scope, operation, key, fingerprint, state, locked_until, created_at) VALUES (${TENANT_A}, ${OP}, 'w2', 'print', 'executed', ${t.deps.clock.nowUs() + 60_000_000}, ${t.deps.clock.nowUs()})`,
    )
    const request = new RequestIdempotency(t.deps)
    request.claim = claim
    const refused = await problemFromAsync(() => runWithIdempotency(request, () => put('idem-2')))
    expect(refused.code).toBe('conflict')
    expect(await settings()).toBe(0)
  })

  test('a first write that rolled back leaves the key unwritten; its 409 answer is still kept for replay', async () => {
    const claim = held(await claimKey(t.deps, TENANT_A, OP, 'w3', 'print'))
    const request = new RequestIdempotency(t.deps)
    request.claim = claim
    await expect(
      runWithIdempotency(request, () =>
        withTransaction(t.deps.db, async (tx) => {
          await tx.insert(serviceSettings).values({ key: 'idem-3', value: 'v', updatedAt: 1 }).run()
          throw new Error('refused halfway')
        }),
      ),
    ).rejects.toThrow('refused halfway')
    expect(await keyCount()).toBe(0)
    expect(await settings()).toBe(0)
    await finishKey(t.deps, claim, json(409, { code: 'conflict' }))
    expect(await claimKey(t.deps, TENANT_A, OP, 'w3', 'print')).toEqual(expect.objectContaining({ kind: 'replay', status: 409 }))
  })
})

describe('the idempotency.gc job', () => {
  const RETENTION_S = 24 * 3600

  test('deletes only keys older than the retention', async () => {
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, 'old-1', 'p')), json(201, {}))
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_B, OP, 'old-2', 'p')), json(201, {}))
    t.deps.testClock!.advance(RETENTION_S / 2)
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, 'recent', 'p')), json(201, {}))
    t.deps.testClock!.advance(RETENTION_S / 2 + 60)
    const runner = new JobRunner(t.deps, jobs)
    const outcome = await runner.run('idempotency.gc', 'manual:1')
    expect(outcome).toEqual(expect.objectContaining({ outcome: 'succeeded', detail: 'removed 2 expired idempotency keys' }))
    expect(await t.deps.db.all(sql`SELECT key FROM idempotency_keys`)).toEqual([{ key: 'recent' }])
  })

  test('keeps a key just inside the retention', async () => {
    await finishKey(t.deps, held(await claimKey(t.deps, TENANT_A, OP, 'k', 'p')), json(201, {}))
    t.deps.testClock!.advance(RETENTION_S - 60)
    expect(await collectExpiredKeys(t.deps)).toBe(0)
    expect(await keyCount()).toBe(1)
    t.deps.testClock!.advance(120)
    expect(await collectExpiredKeys(t.deps)).toBe(1)
    expect(await keyCount()).toBe(0)
  })
})
