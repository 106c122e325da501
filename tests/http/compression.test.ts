import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import { COMPRESS_MIN_BYTES, negotiateEncoding } from '../../src/platform/compression'
import { insertServers, mintPat, newTenant } from '../support/access'
import { startTestApp, type TestApp } from '../support/app'

/** Accept-Encoding on answers (docs/conventions.md "Compression"). */
let app: TestApp
beforeAll(async () => {
  app = await startTestApp({ TEST_CLOCK: 'true' })
})
afterAll(() => app.close())

/** The bytes as they came over the wire: no decompression by the client. */
async function raw(path: string, init: RequestInit = {}) {
  const res = await fetch(`${app.url}${path}`, { ...init, decompress: false } as RequestInit)
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) }
}

const decode: Record<string, (b: Uint8Array) => string> = {
  gzip: (b) => gunzipSync(b).toString(),
  br: (b) => brotliDecompressSync(b).toString(),
  zstd: (b) => new TextDecoder().decode(Bun.zstdDecompressSync(b)),
}

describe('negotiation', () => {
  test.each([
    [null, null],
    ['', null],
    ['identity', null],
    ['gzip', 'gzip'],
    ['gzip, deflate, br', 'br'],
    ['gzip, deflate, br, zstd', 'zstd'],
    ['zstd;q=0.5, gzip', 'gzip'],
    ['br;q=0, gzip;q=0', null],
    ['*', 'zstd'],
    ['*;q=0.1, gzip;q=0.2', 'gzip'],
    ['zstd;q=0, *', 'br'],
    ['gzip;q=abc', null],
    ['GZIP ; Q=0.9', 'gzip'],
  ])('Accept-Encoding %p answers with %p', (header, coding) => {
    expect(negotiateEncoding(header)).toBe(coding as never)
  })
})

describe('answers', () => {
  test.each(['gzip', 'br', 'zstd'])('a large JSON answer is %s-encoded and decodes to the same JSON', async (coding) => {
    const plain = await raw('/api/v1/openapi.json', { headers: { 'accept-encoding': 'identity' } })
    expect(plain.res.headers.get('content-encoding')).toBeNull()
    expect(plain.res.headers.get('vary')).toMatch(/accept-encoding/i)
    const packed = await raw('/api/v1/openapi.json', { headers: { 'accept-encoding': coding } })
    expect(packed.res.status).toBe(200)
    expect(packed.res.headers.get('content-encoding')).toBe(coding)
    expect(packed.res.headers.get('vary')).toMatch(/accept-encoding/i)
    expect(packed.bytes.byteLength).toBeLessThan(plain.bytes.byteLength / 3)
    expect(decode[coding]!(packed.bytes)).toBe(new TextDecoder().decode(plain.bytes))
  })

  test("compressed answers are kept by content: two answers of one size never get each other's bytes", async () => {
    const values = ['a', 'b'].map((c) => c.repeat(1000))
    const ids: string[] = []
    for (const value of values) {
      const created = await app.fetch('/api/v1/_test/probes', { method: 'POST', json: { value } })
      ids.push(created.headers.get('location')!)
    }
    for (let round = 0; round < 2; round++)
      for (const [i, location] of ids.entries()) {
        const { res, bytes } = await raw(location, { headers: { 'accept-encoding': 'gzip' } })
        expect(res.headers.get('content-encoding')).toBe('gzip')
        expect((JSON.parse(decode.gzip!(bytes)) as { value: string }).value).toBe(values[i]!)
      }
  })

  test("a cached fleet page is compressed once per coding and never served for another tenant's", async () => {
    const tenants = await Promise.all(['cmp-a', 'cmp-b'].map((tag) => newTenant(app, tag)))
    const tokens: string[] = []
    for (const [i, member] of tenants.entries()) {
      await insertServers(
        app,
        member.tenantId,
        Array.from({ length: 6 }, (_, n) => `${'ab'[i]}-rig-${n}`),
      )
      tokens.push((await mintPat(app, member)).token)
    }
    const page = (token: string, coding: string) => raw('/api/v1/servers', { headers: { authorization: `Bearer ${token}`, 'accept-encoding': coding } })
    const plain = await Promise.all(tokens.map(async (token) => new TextDecoder().decode((await page(token, 'identity')).bytes)))
    expect(plain[0]!.length).toBeGreaterThan(COMPRESS_MIN_BYTES)
    expect(plain[0]).not.toBe(plain[1])
    for (let round = 0; round < 2; round++)
      for (const coding of ['gzip', 'br', 'zstd'])
        for (const [i, token] of tokens.entries()) {
          const { res, bytes } = await page(token, coding)
          expect(res.headers.get('content-encoding')).toBe(coding)
          expect(decode[coding]!(bytes)).toBe(plain[i]!)
        }
  })

  test('an answer below the threshold is sent as it is', async () => {
    const { res, bytes } = await raw('/healthz', { headers: { 'accept-encoding': 'gzip' } })
    expect(bytes.byteLength).toBeLessThan(COMPRESS_MIN_BYTES)
    expect(res.headers.get('content-encoding')).toBeNull()
    expect(JSON.parse(new TextDecoder().decode(bytes))).toEqual({ status: 'ok' })
  })

  test('the ETag names the version whatever the coding; If-None-Match and If-Match take it back', async () => {
    const created = await app.fetch('/api/v1/_test/probes', { method: 'POST', json: { value: 'x'.repeat(1024) } })
    expect(created.status).toBe(201)
    const location = created.headers.get('location')!
    const packed = await raw(location, { headers: { 'accept-encoding': 'gzip' } })
    const plain = await raw(location, { headers: { 'accept-encoding': 'identity' } })
    expect(packed.res.headers.get('content-encoding')).toBe('gzip')
    expect(packed.res.headers.get('etag')).toBe('"1"')
    expect(plain.res.headers.get('etag')).toBe('"1"')
    const again = await raw(location, { headers: { 'accept-encoding': 'gzip', 'if-none-match': '"1"' } })
    expect(again.res.status).toBe(304)
    const changed = await app.fetch(location, { method: 'PATCH', json: { value: 'y' }, headers: { 'if-match': packed.res.headers.get('etag')! } })
    expect(changed.status).toBe(200)
  })

  test('a problem document is a compressible type: it says Vary: Accept-Encoding', async () => {
    const { res, bytes } = await raw('/api/v1/_test/probes', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'accept-encoding': 'gzip' },
      body: JSON.stringify({ value: 'x'.repeat(2000) }),
    })
    expect(res.status).toBe(422)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    expect(res.headers.get('vary')).toMatch(/accept-encoding/i)
    expect(bytes.byteLength).toBeLessThan(COMPRESS_MIN_BYTES)
    expect(res.headers.get('content-encoding')).toBeNull()
  })
})
