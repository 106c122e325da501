import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { launchChromium } from '../support/chromium'
import { startTestApp, TEST_PUBLIC_URL, type TestApp } from '../support/app'

/**
 * /api/v1/docs in Debian's headless Chromium (scripts/test installs it when missing). The browser
 * resolves the test app's PUBLIC_URL host to the app's loopback port, so the page is seen exactly as
 * in a deployment: served from PUBLIC_URL, and "Try it out" calling the document's server.
 */

const ORIGIN = new URL(TEST_PUBLIC_URL).origin
// The page's DOM, as the function given to page.evaluate sees it in the browser (no DOM lib here).
type El = { getAttribute(name: string): string | null; textContent: string | null; querySelector(selector: string): El | null }
declare const document: { querySelectorAll(selector: string): Iterable<El> & { length: number } }
type Doc = { tags?: { name: string }[]; paths: Record<string, Record<string, { tags?: string[]; operationId: string }>> }

let app: TestApp
let chromium: Awaited<ReturnType<typeof launchChromium>> | undefined
let browser: BrowserContext
let page: Page
let doc: Doc
const requested: string[] = []
const consoleErrors: string[] = []

beforeAll(async () => {
  app = await startTestApp({ LOG_LEVEL: 'silent' })
  doc = (await (await app.fetch('/api/v1/openapi.json')).json()) as Doc
  chromium = await launchChromium({
    // PUBLIC_URL's host (port 80) is this machine's test app; every other name fails to resolve.
    args: [`--host-resolver-rules=MAP ${new URL(ORIGIN).host}:80 127.0.0.1:${new URL(app.url).port}`],
  })
  browser = chromium.context
  page = browser.pages()[0] ?? (await browser.newPage())
  page.on('request', (r) => requested.push(r.url()))
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text())
  })
  await page.goto(`${ORIGIN}/api/v1/docs`, { timeout: 60_000 })
  await page.waitForSelector('.opblock-tag[data-tag]', { timeout: 60_000 })
}, 120_000)

afterAll(async () => {
  await chromium?.close()
  await app?.close()
})

describe('the interactive API docs in a real browser', () => {
  test('render every tag and every operation of the OpenAPI document', async () => {
    const expectedOps = new Set<string>()
    const expectedTags = new Set<string>()
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) {
        expectedOps.add(`${method.toUpperCase()} ${path}`)
        for (const tag of op.tags ?? []) expectedTags.add(tag)
      }
    // Every tag the document declares is used by some operation, so none is silently absent.
    for (const tag of doc.tags ?? []) expect(expectedTags).toContain(tag.name)

    // Tags start collapsed (docs.routes.ts says why): open each in turn, read its operations, close it.
    const shownTags = await page.evaluate(() => [...document.querySelectorAll('.opblock-tag[data-tag]')].map((e) => e.getAttribute('data-tag')!))
    expect(new Set(shownTags)).toEqual(expectedTags)
    const shownOps = new Set<string>()
    for (const tag of shownTags) {
      const ops = [...expectedOps].filter((o) => {
        const [method, path] = o.split(' ')
        return (doc.paths[path!]![method!.toLowerCase()]!.tags ?? []).includes(tag)
      })
      const header = page.locator(`.opblock-tag[data-tag="${tag}"]`)
      await header.click()
      await page.waitForFunction((n) => document.querySelectorAll('.opblock-tag-section.is-open .opblock').length >= n, ops.length, { timeout: 30_000 })
      const open = await page.evaluate(() =>
        [...document.querySelectorAll('.opblock-tag-section.is-open .opblock')].map(
          (e) => `${e.querySelector('.opblock-summary-method')?.textContent?.trim()} ${e.querySelector('.opblock-summary-path')?.getAttribute('data-path')}`,
        ),
      )
      expect(new Set(open)).toEqual(new Set(ops))
      for (const o of open) shownOps.add(o)
      await header.click()
      await page.waitForFunction(() => document.querySelectorAll('.opblock-tag-section.is-open').length === 0, undefined, { timeout: 30_000 })
    }
    expect(shownOps).toEqual(expectedOps)
    expect(expectedOps.size).toBeGreaterThan(50)
  })

  test('load nothing from outside the service, and log no error', () => {
    const elsewhere = requested.filter((u) => !u.startsWith(`${ORIGIN}/`))
    expect(elsewhere).toEqual([])
    expect(requested).toContain(`${ORIGIN}/api/v1/openapi.json`)
    expect(consoleErrors).toEqual([])
  })

  test('"Try it out" on GET /healthz calls the service and shows its answer', async () => {
    await page.locator('.opblock-tag[data-tag="system"]').click()
    const block = page.locator('.opblock.opblock-get', { has: page.locator('.opblock-summary-path[data-path="/healthz"]') })
    await block.locator('.opblock-summary').first().click()
    await block.locator('button.try-out__btn').click()
    await block.locator('button.execute').click()
    const status = block.locator('.live-responses-table tr.response .response-col_status')
    await status.waitFor({ timeout: 30_000 })
    expect((await status.textContent())?.trim()).toBe('200')
    const body = await block.locator('.live-responses-table tr.response .highlight-code pre').textContent()
    expect(JSON.parse(body!)).toEqual({ status: 'ok' })
    expect(requested).toContain(`${ORIGIN}/healthz`)
  }, 60_000)
})

describe('the docs files', () => {
  test('are served with their content types, from the pinned package', async () => {
    const types: Record<string, string> = {
      '/api/v1/docs': 'text/html; charset=utf-8',
      '/api/v1/docs/swagger-ui.css': 'text/css; charset=utf-8',
      '/api/v1/docs/swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
      '/api/v1/docs/gpuhq-docs.js': 'text/javascript; charset=utf-8',
      '/api/v1/docs/favicon-32x32.png': 'image/png',
    }
    for (const [path, type] of Object.entries(types)) {
      const res = await app.fetch(path)
      await res.arrayBuffer()
      expect({ path, status: res.status, type: res.headers.get('content-type') }).toEqual({ path, status: 200, type })
    }
    const html = await (await app.fetch('/api/v1/docs')).text()
    const pinned = (await Bun.file(join(import.meta.dir, '../../package.json')).json()).dependencies['swagger-ui-dist']
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/)
    expect(html).toContain(`swagger-ui-bundle.js?v=${pinned}`)
    expect(html).not.toMatch(/https?:\/\/(?!gpuhq\.test)/)
  })

  test('any other name under /api/v1/docs is a problem document 404', async () => {
    const res = await app.fetch('/api/v1/docs/package.json')
    expect(res.status).toBe(404)
    expect(res.headers.get('content-type')).toBe('application/problem+json')
  })
})
