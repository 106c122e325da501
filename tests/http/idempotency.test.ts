import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { fingerprint } from '../../src/platform/idempotency'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/**
 * Idempotency-Key on POST /api/v1/_test/probes (docs/conventions.md "Idempotency-Key"). The probe
 * is a real acknowledged write, so "exactly once" is counted in its table.
 */

const PROBES = '/api/v1/_test/probes'
const OPERATION = `POST ${PROBES}`

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

let seq = 0
const newKey = () => `key-${Date.now()}-${++seq}`

const create = (key: string, json: unknown) => app.fetch(PROBES, { method: 'POST', json, headers: { 'idempotency-key': key } })

const probesWithValue = async (value: string) => ((await app.deps.db.get(sql`SELECT count(*) AS n FROM test_probes WHERE value = ${value}`)) as { n: number }).n

const keyRows = async (key: string) =>
  (await app.deps.db.all(sql`SELECT * FROM idempotency_keys WHERE key = ${key}`)) as {
    scope: string
    operation: string
    state: string
    locked_until: number
    response_box: Uint8Array | null
    created_at: number
  }[]

const advanceClock = async (seconds: number) => {
  const res = await app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })
  expect(res.status).toBe(200)
}

describe('replaying a request', () => {
  test('the same key and body replay the first response and create the probe only once', async () => {
    const key = newKey()
    const first = await create(key, { value: 'replay-me' })
    expect(first.status).toBe(201)
    expect(first.headers.get('idempotent-replayed')).toBeNull()
    const firstBody = await first.text()

    for (let i = 0; i < 3; i++) {
      const again = await create(key, { value: 'replay-me' })
      expect(again.status).toBe(201)
      expect(again.headers.get('idempotent-replayed')).toBe('true')
      expect(await again.text()).toBe(firstBody)
      expect(again.headers.get('location')).toBe(first.headers.get('location'))
      expect(again.headers.get('etag')).toBe(first.headers.get('etag'))
      expect(again.headers.get('content-type')).toBe(first.headers.get('content-type'))
      // A replay is still its own request, with its own id.
      expect(again.headers.get('x-request-id')).not.toBe(first.headers.get('x-request-id'))
    }
    expect(await probesWithValue('replay-me')).toBe(1)
  })

  test('the order of keys in the JSON body does not make it a different request', async () => {
    const key = newKey()
    const first = await app.fetch(PROBES, {
      method: 'POST',
      body: '{"value":"ordered"}',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    })
    expect(first.status).toBe(201)
    // Same members, other spacing: the same canonical body.
    const again = await app.fetch(PROBES, {
      method: 'POST',
      body: '{ "value" : "ordered" }',
      headers: { 'content-type': 'application/json', 'idempotency-key': key },
    })
    expect(again.status).toBe(201)
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    expect(await probesWithValue('ordered')).toBe(1)
  })

  test('nested key order is ignored by the request fingerprint', () => {
    // The probe body has one member, so member order is shown on the fingerprint the layer compares.
    const a = fingerprint('POST', '/r', { b: 1, a: { y: [1, { q: 1, p: 2 }], x: null } })
    const b = fingerprint('POST', '/r', { a: { x: null, y: [1, { p: 2, q: 1 }] }, b: 1 })
    expect(a).toBe(b)
    expect(fingerprint('POST', '/r', { a: [1, 2] })).not.toBe(fingerprint('POST', '/r', { a: [2, 1] }))
  })

  test('the same key with a different body answers 409 idempotency_conflict and creates nothing', async () => {
    const key = newKey()
    expect((await create(key, { value: 'original' })).status).toBe(201)
    await expectProblem(await create(key, { value: 'changed' }), 409, 'idempotency_conflict')
    expect(await probesWithValue('changed')).toBe(0)
    expect(await probesWithValue('original')).toBe(1)
  })

  test('requests without a key are never deduplicated', async () => {
    for (let i = 0; i < 2; i++) expect((await app.fetch(PROBES, { method: 'POST', json: { value: 'no-key' } })).status).toBe(201)
    expect(await probesWithValue('no-key')).toBe(2)
  })
})

describe('concurrent retries', () => {
  test('twenty concurrent requests with one key create exactly one probe', async () => {
    const key = newKey()
    const responses = await Promise.all(Array.from({ length: 20 }, () => create(key, { value: 'concurrent' })))
    expect(await probesWithValue('concurrent')).toBe(1)

    const created = responses.filter((r) => r.status === 201)
    expect(created.length).toBeGreaterThanOrEqual(1)
    const bodies = new Set(await Promise.all(created.map((r) => r.text())))
    expect(bodies.size).toBe(1)
    expect(created.filter((r) => r.headers.get('idempotent-replayed') === null)).toHaveLength(1)

    for (const r of responses.filter((r) => r.status !== 201)) {
      expect(r.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
      await expectProblem(r, 409, 'conflict')
    }
  })
})

describe('what is stored', () => {
  test('a request refused by validation stores nothing, and the corrected retry with the same key succeeds', async () => {
    const key = newKey()
    await expectProblem(await create(key, { value: '' }), 422, 'validation_failed')
    expect(await keyRows(key)).toHaveLength(0)
    const fixed = await create(key, { value: 'corrected' })
    expect(fixed.status).toBe(201)
    expect(fixed.headers.get('idempotent-replayed')).toBeNull()
    expect(await probesWithValue('corrected')).toBe(1)
  })

  test('the stored response is encrypted at rest', async () => {
    const key = newKey()
    const value = `plaintext-marker-${crypto.randomUUID()}`
    const res = await create(key, { value })
    const { id } = (await res.json()) as { id: string }
    const [row] = await keyRows(key)
    expect(row!.state).toBe('completed')
    const box = Buffer.from(row!.response_box!)
    expect(box.length).toBeGreaterThan(0)
    for (const needle of [value, id, '"value"', 'location']) expect(box.includes(Buffer.from(needle))).toBe(false)
    // And nothing else in the row carries the body either.
    expect(JSON.stringify({ ...row, response_box: null })).not.toContain(value)
  })
})

describe('the key itself', () => {
  test('keys of 1 to 128 printable ASCII characters are accepted', async () => {
    const printable = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => String.fromCharCode(0x21 + i)).join('')
    const keys = ['!', '~', printable, printable + 'x'.repeat(128 - printable.length)]
    expect(keys.at(-1)).toHaveLength(128)
    for (const key of keys) {
      const value = `charset-${keys.indexOf(key)}`
      expect((await create(key, { value })).status).toBe(201)
      expect((await create(key, { value })).headers.get('idempotent-replayed')).toBe('true')
    }
  })

  test('a key of 129 characters, with a space, or with non-ASCII characters is refused at /idempotency-key', async () => {
    for (const key of ['k'.repeat(129), 'has space', 'caf\u00e9', 'tab\there']) {
      const doc = await expectProblem(await create(key, { value: 'bad-key' }), 422, 'validation_failed')
      expect(doc.errors!.map((e) => e.path)).toEqual(['/idempotency-key'])
    }
    expect(await probesWithValue('bad-key')).toBe(0)
  })

  test('the same key on a different operation is a different key', async () => {
    const key = newKey()
    // Another operation already holds this key with its own stored outcome.
    await app.deps.db.run(sql`INSERT INTO idempotency_keys (scope, operation, key, fingerprint, state, locked_until, response_status, response_box, created_at)
         VALUES ('public', 'POST /api/v1/other', ${key}, ${fingerprint('POST', '/api/v1/other', { value: 'other' })}, 'completed', 0, 201, NULL, ${app.deps.clock.nowUs()})`)
    const res = await create(key, { value: 'same-key-other-op' })
    expect(res.status).toBe(201)
    expect(res.headers.get('idempotent-replayed')).toBeNull()
    expect((await keyRows(key)).map((r) => r.operation).sort()).toEqual([OPERATION, 'POST /api/v1/other'].sort())
  })
})

describe('lifetime of a key', () => {
  test('after the retention has passed and the collector ran, the key is new again', async () => {
    const key = newKey()
    expect((await create(key, { value: 'before-retention' })).status).toBe(201)
    await advanceClock(23 * 3600)
    // Still inside 24 hours: the key is remembered.
    await expectProblem(await create(key, { value: 'after-retention' }), 409, 'idempotency_conflict')

    await advanceClock(2 * 3600)
    const gc = await app.fetch('/api/v1/_test/jobs/idempotency.gc/run', { method: 'POST' })
    expect(gc.status).toBe(200)
    expect(((await gc.json()) as { outcome: string }).outcome).toBe('succeeded')
    expect(await keyRows(key)).toHaveLength(0)

    const reused = await create(key, { value: 'after-retention' })
    expect(reused.status).toBe(201)
    expect(reused.headers.get('idempotent-replayed')).toBeNull()
    expect(await probesWithValue('after-retention')).toBe(1)
  })

  test('a claim left in progress by a crashed process is taken over once its lock has expired', async () => {
    const key = newKey()
    const body = { value: 'crashed-claim' }
    const now = app.deps.clock.nowUs()
    // What a process that died between claiming and storing leaves behind: locked for 60 s.
    await app.deps.db.run(sql`INSERT INTO idempotency_keys (scope, operation, key, fingerprint, state, locked_until, response_status, response_box, created_at)
         VALUES ('public', ${OPERATION}, ${key}, ${fingerprint('POST', PROBES, body)}, 'in_progress', ${now + 60_000_000}, NULL, NULL, ${now})`)

    const busy = await create(key, body)
    expect(busy.headers.get('retry-after')).toMatch(/^[1-9]\d*$/)
    await expectProblem(busy, 409, 'conflict')
    expect(await probesWithValue('crashed-claim')).toBe(0)

    await advanceClock(61)
    const taken = await create(key, body)
    expect(taken.status).toBe(201)
    expect(await probesWithValue('crashed-claim')).toBe(1)
    expect((await keyRows(key))[0]!.state).toBe('completed')
    expect((await create(key, body)).headers.get('idempotent-replayed')).toBe('true')
  })

  test('a stale claim with a different body still answers idempotency_conflict', async () => {
    const key = newKey()
    const now = app.deps.clock.nowUs()
    await app.deps.db.run(sql`INSERT INTO idempotency_keys (scope, operation, key, fingerprint, state, locked_until, response_status, response_box, created_at)
         VALUES ('public', ${OPERATION}, ${key}, ${fingerprint('POST', PROBES, { value: 'first-body' })}, 'in_progress', ${now - 1_000_000}, NULL, NULL, ${now - 120_000_000})`)
    await expectProblem(await create(key, { value: 'second-body' }), 409, 'idempotency_conflict')
    expect(await probesWithValue('second-body')).toBe(0)
  })
})
