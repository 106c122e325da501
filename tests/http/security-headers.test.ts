import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { newOwner, type Owner } from '../support/fleet'
import { startTestApp, type TestApp } from '../support/app'

/** Issue 13 (16): headers that keep answers out of caches, sniffers and frames. */

let app: TestApp
let owner: Owner
beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  owner = await newOwner(app, 'headers', 'pro')
})
afterAll(() => app.close())

describe('response headers', () => {
  test('every answer says nosniff, public or not', async () => {
    for (const path of ['/healthz', '/api/v1/openapi.json', '/problems/not_found', '/api/v1/me', '/api/v1/no-such-route'])
      expect({ path, v: (await app.fetch(path, { headers: owner.headers })).headers.get('x-content-type-options') }).toEqual({ path, v: 'nosniff' })
  })

  test('an authenticated answer, and one that shows a secret once, is never stored by a cache', async () => {
    expect((await app.fetch('/api/v1/me', { headers: owner.headers })).headers.get('cache-control')).toBe('no-store')
    const pat = await app.fetch('/api/v1/tokens', { method: 'POST', headers: owner.headers, json: { name: 'ci' } })
    expect(pat.status).toBe(201)
    expect(pat.headers.get('cache-control')).toBe('no-store')
    const signin = await app.fetch('/api/v1/auth/sessions', { method: 'POST', json: { email: owner.email, password: 'wrong password here' } })
    expect(signin.headers.get('cache-control')).toBe('no-store')
  })

  test('public documents keep their own caching', async () => {
    expect((await app.fetch('/problems/not_found')).headers.get('cache-control')).toBe('public, max-age=3600')
  })

  test('HTML pages refuse to be framed', async () => {
    const res = await app.fetch('/problems')
    expect(res.headers.get('content-type')).toStartWith('text/html')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'")
  })

  test('HSTS is sent only when PUBLIC_URL is https', async () => {
    expect((await app.fetch('/healthz')).headers.get('strict-transport-security')).toBeNull()
    const secure = await startTestApp({ LOG_LEVEL: 'silent', PUBLIC_URL: 'https://gpuhq.example' })
    try {
      expect((await secure.fetch('/healthz')).headers.get('strict-transport-security')).toBe('max-age=31536000; includeSubDomains')
    } finally {
      await secure.close()
    }
  })
})
