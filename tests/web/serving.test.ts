import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'

/** How the web console is served (docs/console.md "Serving"): one page, hashed files, a strict policy. */

let app: TestApp
let html: string
let page: Response

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  page = await app.fetch('/')
  html = await page.text()
})
afterAll(() => app.close())

const assetsOf = (text: string) => [...text.matchAll(/(?:src|href)="(\/app\/[^"]+)"/g)].map((m) => m[1]!)

describe('the console page', () => {
  test('is HTML at / that is always revalidated, and names only files of its own origin', () => {
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('cache-control')).toBe('no-cache')
    expect(html).toContain('<div id="app">')
    const assets = assetsOf(html)
    expect(assets.length).toBe(3)
    expect(assets.some((a) => a.endsWith('.js'))).toBe(true)
    expect(assets.some((a) => a.endsWith('.css'))).toBe(true)
    // Only relative addresses: nothing the page loads can come from another origin.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//)
  })

  test('carries a Content-Security-Policy of this origin only, with no inline script or style, and refuses framing', () => {
    const csp = page.headers.get('content-security-policy')!
    const directives = Object.fromEntries(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([k, ...v]) => [k, v.join(' ')]),
    )
    expect(directives).toMatchObject({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'img-src': "'self'",
      'connect-src': "'self'",
      'base-uri': "'none'",
      'form-action': "'none'",
      'frame-ancestors': "'none'",
    })
    expect(csp).not.toContain('unsafe')
    expect(csp).not.toContain('http')
    expect(page.headers.get('x-frame-options')).toBe('DENY')
    expect(page.headers.get('referrer-policy')).toBe('same-origin')
    expect(page.headers.get('x-content-type-options')).toBe('nosniff')
  })
})

describe('the console files', () => {
  test('carry a content hash in their name, their type, and a year of immutable caching', async () => {
    const types: Record<string, string> = { js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8', svg: 'image/svg+xml' }
    for (const path of assetsOf(html)) {
      expect(path).toMatch(/^\/app\/[a-z]+-[a-z0-9]{6,}\.(js|css|svg)$/)
      const res = await app.fetch(path, { headers: { 'accept-encoding': 'identity' } })
      const body = await res.text()
      expect({ path, status: res.status, type: res.headers.get('content-type') }).toEqual({ path, status: 200, type: types[path.split('.').pop()!]! })
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      expect(res.headers.get('content-encoding')).toBeNull()
      expect(body.length).toBeGreaterThan(100)
    }
  })

  test('are sent compressed when the browser accepts it, with the same bytes once decoded', async () => {
    const js = assetsOf(html).find((a) => a.endsWith('.js'))!
    const plain = new Uint8Array(await (await app.fetch(js, { headers: { 'accept-encoding': 'identity' } })).arrayBuffer())
    for (const coding of ['br', 'gzip', 'zstd']) {
      // Bun's fetch decodes the body; the header says what travelled.
      const res = await app.fetch(js, { headers: { 'accept-encoding': coding } })
      expect(res.headers.get('content-encoding')).toBe(coding)
      expect(res.headers.get('vary')).toBe('Accept-Encoding')
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(plain)
    }
  })

  test('an unknown name under /app/ is a problem document 404, and the API keeps its own paths', async () => {
    const res = await app.fetch('/app/main-00000000.js')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
    const api = await app.fetch('/api/v1/nope')
    expect(api.status).toBe(404)
    expect(api.headers.get('content-type')).toBe('application/problem+json')
    const health = await app.fetch('/healthz')
    expect(await health.json()).toEqual({ status: 'ok' })
  })
})
