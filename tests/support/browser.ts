import { expect } from 'bun:test'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { BrowserContext, Page } from 'playwright-core'
import { launchChromium } from './chromium'
import { freePort, startTestApp, type TestApp } from './app'
import { startFakeSmtp, type FakeSmtp } from './smtp'
import { newOwner, setPlan, type Owner } from './fleet'
import { GOOD_PASSWORD } from './accounts'

/**
 * The web console in Debian's headless Chromium (scripts/test installs it when missing), driven by
 * playwright-core, against the real app with a local SMTP server. PUBLIC_URL is
 * http://localhost:<port>: browsers keep the `Secure` `__Host-` session cookie over plain http only
 * for localhost, as they would over https in a deployment.
 *
 * Every request of every page of the browser is recorded: `outside()` lists those that left the
 * service's origin, and each journey's test ends by expecting it empty. `axe()` runs axe-core (the
 * pinned package's axe.min.js, evaluated in the page: DevTools evaluation is outside the page's
 * Content-Security-Policy, so the policy under test stays as strict as served).
 */

const SHOTS = join(import.meta.dir, '../../test-results/web')
const AXE = await Bun.file(require.resolve('axe-core/axe.min.js')).text()

/** Generous: a loaded two-core machine runs several suites at once. Tests wait on what is visible. */
export const WAIT = 30_000

/** A browser on one origin, with its watchers (see above). */
export type BrowserSession = {
  origin: string
  context: BrowserContext
  page: Page
  /** Every URL any page of the browser requested, in order. */
  requests: string[]
  /** Console errors and Content-Security-Policy violations of every page. */
  problems: string[]
  /** Every answer of the origin's API, in order: "POST /api/v1/auth/signup/verify 401". */
  answers: string[]
  outside: () => string[]
  axe: (page?: Page) => Promise<AxeViolation[]>
  shot: (name: string, page?: Page) => Promise<void>
  close: () => Promise<void>
}

/**
 * Runs a journey's steps; when one fails, its error also says what the page showed and what the
 * API answered last, so a failure in a CI log explains itself.
 */
export async function journey(c: BrowserSession, steps: () => Promise<void>): Promise<void> {
  try {
    await steps()
  } catch (e) {
    const error = e instanceof Error ? e : new Error(String(e))
    // The text, then each field's value (innerText leaves values out).
    const shown = await c.page
      .evaluate(() => {
        const d = document as unknown as {
          body: { innerText: string }
          querySelectorAll: (s: string) => ArrayLike<{ id: string; name: string; type: string; value: string }>
        }
        const fields = Array.from(d.querySelectorAll('input, select, textarea'))
          .map((f) => `${f.name || f.id}=${f.type === 'password' ? `(${f.value.length} characters)` : JSON.stringify(f.value)}`)
          .join(', ')
        return `${d.body.innerText} || fields: ${fields}`
      })
      .then((t) => t.replace(/\n+/g, ' | ').slice(0, 1200))
      .catch((why: unknown) => `(unreadable: ${why})`)
    error.message += `\n-- the page (${c.page.url()}) showed: ${shown}\n-- the API's last answers: ${c.answers.slice(-12).join(', ') || 'none'}`
    throw error
  }
}

/** The real app (with a local SMTP server) and a browser on its origin. */
export type ConsoleSession = BrowserSession & { app: TestApp; smtp: FakeSmtp }

type AxeViolation = { id: string; impact: string | null; help: string; nodes: { target: string[]; failureSummary?: string }[] }

declare const window: { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: AxeViolation[] }> }; __csp: string[] }
declare const document: unknown

/** Debian's headless Chromium, watching every page it opens for `origin` (a test app or the demo). */
export async function openBrowser(origin: string, viewport = { width: 1280, height: 900 }, args: string[] = []): Promise<BrowserSession> {
  const { context, close } = await launchChromium({ viewport, args: ['--disable-features=Translate,OptimizationHints,MediaRouter', ...args] })
  const requests: string[] = []
  const problems: string[] = []
  const answers: string[] = []
  context.on('request', (r) => requests.push(r.url()))
  // A refusal the page did not expect is printed where the test runs, so the lines a failing test
  // leaves in the log (scripts/test repeats them at the end) say what the service answered.
  context.on('response', (r) => {
    if (!r.url().startsWith(`${origin}/api/`)) return
    const answer = `${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`
    answers.push(answer)
    // With what the page sent: a test's inputs are no secrets, and a refused body says most.
    if (r.status() >= 400 && !(r.status() === 401 && answer.startsWith('GET /api/v1/me ')))
      console.error(`[browser] ${answer}${r.request().postData() ? ` after ${r.request().postData()?.slice(0, 300)}` : ''}`)
  })
  context.on('requestfailed', (r) => {
    // ERR_ABORTED is the page leaving a request behind (a navigation, a closed stream): not news.
    if (r.url().startsWith(`${origin}/`) && r.failure()?.errorText !== 'net::ERR_ABORTED')
      console.error(`[browser] ${r.method()} ${new URL(r.url()).pathname} failed: ${r.failure()?.errorText}`)
  })
  const watch = (p: Page) => {
    p.on('console', (m) => {
      // A 401 or 404 the console handles (GET /me before signing in) is logged by Chromium as a
      // failed load; the page's own errors and policy violations are what count.
      if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) {
        problems.push(m.text())
        console.error(`[browser console] ${m.text()}`)
      }
    })
    // An exception the page did not catch stops whatever it was doing: a problem, printed at once.
    p.on('pageerror', (e) => {
      problems.push(`uncaught: ${e.message}`)
      console.error(`[browser uncaught] ${e.stack ?? e.message}`)
    })
    // Confirmations (decommission, cancel, delete) are accepted, as the member would.
    p.on('dialog', (d) => void d.accept())
  }
  context.on('page', watch)
  // Runs before any script of the page, outside its policy: records every CSP violation.
  await context.addInitScript(() => {
    const w = window as unknown as { __csp: string[]; addEventListener: (t: string, f: (e: { violatedDirective: string; blockedURI: string }) => void) => void }
    w.__csp = []
    w.addEventListener('securitypolicyviolation', (e) => w.__csp.push(`${e.violatedDirective} ${e.blockedURI}`))
  })
  const page = context.pages()[0] ?? (await context.newPage())
  watch(page)
  mkdirSync(SHOTS, { recursive: true })
  return {
    origin,
    context,
    page,
    requests,
    problems,
    answers,
    outside: () => requests.filter((u) => !u.startsWith(`${origin}/`)),
    axe: async (p = page) => {
      await p.evaluate(AXE)
      const { violations } = await p.evaluate(() =>
        window.axe.run(document, {
          resultTypes: ['violations'],
          runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
        }),
      )
      const csp = await p.evaluate(() => window.__csp)
      for (const v of csp) problems.push(`CSP: ${v}`)
      return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    },
    shot: async (name, p = page) => {
      await p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })
    },
    close,
  }
}

export async function startConsole(env: Record<string, string> = {}, viewport = { width: 1280, height: 900 }): Promise<ConsoleSession> {
  const smtp = await startFakeSmtp()
  const port = freePort()
  const origin = `http://localhost:${port}`
  const app = await startTestApp({ PUBLIC_URL: origin, SIGNUP_ENABLED: 'true', SMTP_URL: smtp.url, LOG_LEVEL: 'silent', ...env }, { port })
  const browser = await openBrowser(origin, viewport)
  return {
    ...browser,
    app,
    smtp,
    close: async () => {
      await browser.close()
      smtp.refuse(true)
      await app.deps.mail.idle()
      await app.close()
      await smtp.close()
    },
  }
}

/** axe-core finds no serious or critical violation on the page as it stands; the screenshot is saved either way. */
export async function expectAccessible(c: BrowserSession, name: string, page = c.page): Promise<void> {
  await c.shot(name, page)
  const violations = await c.axe(page)
  expect(violations.map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`)).toEqual([])
}

/** Nothing outside the origin, no console error, no policy violation: the end of every journey. */
export function expectClean(c: BrowserSession): void {
  expect(c.outside()).toEqual([])
  expect(c.problems).toEqual([])
}

/**
 * A new tenant's owner (created as the operator would, on `plan`), signed in through the console's
 * own sign-in form; answers the owner with an API session of its own for set-up calls.
 */
export async function signedInOwner(c: ConsoleSession, plan?: string): Promise<Owner> {
  const owner = await newOwner(c.app, 'console')
  if (plan) await setPlan(c.app, owner.tenantId, plan)
  const { page } = c
  await page.goto(`${c.origin}/#/signin`, { timeout: WAIT })
  await page.getByLabel('Email').fill(owner.email)
  await page.getByLabel('Password').fill(GOOD_PASSWORD)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.getByRole('heading', { level: 1, name: 'Fleet' }).waitFor({ timeout: WAIT })
  return owner
}

/** Goes to a console route and waits for its <h1>. */
export async function open(c: ConsoleSession, route: string, title: string | RegExp, page = c.page): Promise<void> {
  await page.goto(`${c.origin}/#${route}`, { timeout: WAIT })
  await page.getByRole('heading', { level: 1, name: title }).waitFor({ timeout: WAIT })
}
