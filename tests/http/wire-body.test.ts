import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync } from 'node:zlib'
import { bytesAnswer, CORKED_BODY_MAX, eventLoopTurn, forTheWire } from '../../src/platform/wire-body'
import { insertServers, mintPat, newTenant } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'
import { onPostgres } from '../support/postgres'

/**
 * src/platform/wire-body.ts: an answer of 15 KiB or more that is ready after its request's turn of
 * the event loop leaves as a stream of one chunk (Bun writes such a body uncorked otherwise, one
 * system call per header piece). What the client reads must be the same bytes either way.
 */

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))
const json = { 'content-type': 'application/json', etag: '"t"' }

describe('forTheWire', () => {
  const large = new Uint8Array(CORKED_BODY_MAX).fill(0x61)

  test('an answer ready in its own turn is handed over as it is', () => {
    const turn = eventLoopTurn()
    const answer = bytesAnswer(large, { headers: json })
    expect(forTheWire('GET', answer, turn)).toBe(answer)
  })

  test('a large answer ready in a later turn leaves as a stream of the same bytes, status and headers', async () => {
    const turn = eventLoopTurn()
    await nextTurn()
    const answer = bytesAnswer(large, { status: 201, headers: { ...json, 'content-length': String(large.byteLength) } })
    const sent = forTheWire('GET', answer, turn)
    expect(sent).not.toBe(answer)
    expect(sent.status).toBe(201)
    expect(sent.headers.get('etag')).toBe('"t"')
    expect(sent.headers.get('content-length')).toBeNull()
    expect(new Uint8Array(await sent.arrayBuffer())).toEqual(large)
  })

  test('a smaller answer, an answer to HEAD and a body the service did not make keep their rendering', async () => {
    const turn = eventLoopTurn()
    await nextTurn()
    const small = bytesAnswer(large.subarray(1), { headers: json })
    expect(forTheWire('GET', small, turn)).toBe(small)
    const head = bytesAnswer(large, { headers: json })
    expect(forTheWire('HEAD', head, turn)).toBe(head)
    const text = new Response('a'.repeat(CORKED_BODY_MAX), { headers: json })
    expect(forTheWire('GET', text, turn)).toBe(text)
  })
})

describe('bytesAnswer', () => {
  test('answers of one bytes object each carry them whole, with their own status and headers', async () => {
    const bytes = new TextEncoder().encode(JSON.stringify({ items: Array.from({ length: 500 }, (_, i) => `row ${i}`) }))
    const first = bytesAnswer(bytes, { headers: json })
    const second = bytesAnswer(bytes, { status: 201, headers: { 'content-type': 'text/csv' } })
    expect(second.status).toBe(201)
    expect(first.headers.get('content-type')).toBe('application/json')
    expect(second.headers.get('content-type')).toBe('text/csv')
    expect(new Uint8Array(await first.arrayBuffer())).toEqual(bytes)
    expect(new Uint8Array(await second.arrayBuffer())).toEqual(bytes)
    // Read once more after both were consumed: the bytes are shared, never handed over.
    expect(new Uint8Array(await bytesAnswer(bytes, { headers: json }).arrayBuffer())).toEqual(bytes)
  })
})

describe('a large fleet page over HTTP', () => {
  let app: TestApp
  let token: string
  beforeAll(async () => {
    app = await startTestApp()
    const owner = await newTenant(app, 'wire-body')
    await insertServers(
      app,
      owner.tenantId,
      Array.from({ length: 100 }, (_, i) => `rig-${String(i).padStart(3, '0')}-in-the-second-row-of-the-east-rack`),
    )
    token = (await mintPat(app, owner)).token
  })
  afterAll(() => app.close())

  async function page(encoding: string) {
    const res = await fetch(`${app.url}/api/v1/servers?limit=100`, {
      headers: { authorization: `Bearer ${token}`, 'accept-encoding': encoding },
      decompress: false,
    } as RequestInit)
    expect(res.status).toBe(200)
    return { res, bytes: new Uint8Array(await res.arrayBuffer()) }
  }

  test('the uncompressed page is whole, and the same as the compressed one decoded', async () => {
    for (let round = 0; round < 2; round++) {
      const plain = await page('identity')
      expect(plain.bytes.byteLength).toBeGreaterThan(CORKED_BODY_MAX)
      const items = (JSON.parse(new TextDecoder().decode(plain.bytes)) as { items: { name: string }[] }).items
      expect(items.map((s) => s.name)).toEqual(Array.from({ length: 100 }, (_, i) => `rig-${String(i).padStart(3, '0')}-in-the-second-row-of-the-east-rack`))
      const packed = await page('gzip')
      expect(packed.res.headers.get('content-encoding')).toBe('gzip')
      expect(new Uint8Array(gunzipSync(packed.bytes))).toEqual(plain.bytes)
      const length = plain.res.headers.get('content-length')
      if (length !== null) expect(Number(length)).toBe(plain.bytes.byteLength)
      else expect(plain.res.headers.get('transfer-encoding')).toBe('chunked')
    }
  })

  test.skipIf(!onPostgres)('on PostgreSQL, whose reads end in a later turn, the page leaves as a stream', async () => {
    const plain = await page('identity')
    expect(plain.res.headers.get('transfer-encoding')).toBe('chunked')
    expect(plain.res.headers.get('content-length')).toBeNull()
    expect(plain.res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    expect(plain.res.headers.get('x-content-type-options')).toBe('nosniff')
  })
})
