import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AUTH_LIMITS } from '../../src/modules/accounts/limits'
import { advance, newEmail, post, requestCode, signIn, signUp, startAccountsApp, type Account, type AccountsApp } from '../support/accounts'
import { expectProblem } from '../support/problem'

/**
 * Rate limits (docs/auth.md "Rate limits"): by IP prefix (/24, /64) and by hashed email on signup
 * and reset, by account and network on sign-in with a backoff an attacker cannot turn into a
 * lockout of the real user. The client address comes from X-Forwarded-For only behind a trusted
 * proxy. Every test here runs behind TRUSTED_PROXIES=127.0.0.1 and picks its own networks.
 */

let app: AccountsApp
let account: Account
beforeAll(async () => {
  app = await startAccountsApp({ TRUSTED_PROXIES: '127.0.0.1' })
  account = await signUp(app)
})
afterAll(() => app.stop())

let netSeq = 0
/** A /24 no other test uses: returns two addresses inside it. */
function network(): [string, string] {
  netSeq++
  return [`198.18.${netSeq}.7`, `198.18.${netSeq}.200`]
}
const from = (ip: string) => ({ 'x-forwarded-for': ip })

async function retryAfter(res: Response): Promise<number> {
  const value = res.headers.get('retry-after')
  expect(value).toMatch(/^[1-9]\d*$/)
  await expectProblem(res, 429, 'rate_limited')
  return Number(value)
}

/**
 * The limit's burst was used up by the tries made since `t0` (service clock); the next is refused
 * (429, Retry-After) unless the bucket refilled meanwhile: the GCRA gives one try back every
 * period/limit seconds, so on a slow machine the loop itself may have earned some. Those are
 * allowed, never more than refilled, and then the refusal is expected: a count, not a speed.
 */
async function refusedAfterBurst(t0: number, [limit, period]: readonly [number, number], attempt: () => Promise<Response>): Promise<void> {
  for (let extra = 0; ; extra++) {
    const res = await attempt()
    if (res.status === 429) {
      await retryAfter(res)
      return
    }
    const refilled = Math.floor((app.deps.clock.nowUs() - t0) / ((period * 1_000_000) / limit))
    expect(extra).toBeLessThan(refilled + 1)
  }
}

describe('sign-in backoff', () => {
  test('after 5 failures that network waits (429 + Retry-After) even with the right password, while the owner signs in from another network', async () => {
    const [attacker] = network()
    const [owner] = network()
    for (let i = 0; i < 5; i++) await expectProblem(await signIn(app, account.email, `guess number ${i}`, from(attacker)), 401, 'unauthorized')
    expect(await retryAfter(await signIn(app, account.email, account.password, from(attacker)))).toBe(1)
    expect((await signIn(app, account.email, account.password, from(owner))).status).toBe(201)
  })

  test('the wait doubles with every further failure and never exceeds 15 minutes', async () => {
    const [attacker] = network()
    for (let i = 0; i < 5; i++) await signIn(app, account.email, 'wrong password', from(attacker))
    const waits: number[] = []
    for (let i = 0; i < 12; i++) {
      const wait = await retryAfter(await signIn(app, account.email, 'wrong password', from(attacker)))
      waits.push(wait)
      await advance(app, wait)
      expect((await signIn(app, account.email, 'wrong password', from(attacker))).status).toBe(401)
    }
    expect(waits).toEqual([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900, 900])
  })

  test('a correct sign-in after the wait clears the count of failures', async () => {
    const [ip] = network()
    for (let i = 0; i < 5; i++) await signIn(app, account.email, 'wrong password', from(ip))
    await advance(app, await retryAfter(await signIn(app, account.email, 'wrong password', from(ip))))
    expect((await signIn(app, account.email, account.password, from(ip))).status).toBe(201)
    for (let i = 0; i < 5; i++) expect((await signIn(app, account.email, 'wrong password', from(ip))).status).toBe(401)
  })

  test('the backoff covers the whole /24 of the failing address but only that account', async () => {
    const [a, sameNet] = network()
    const other = await signUp(app)
    for (let i = 0; i < 5; i++) await signIn(app, account.email, 'wrong password', from(a))
    await retryAfter(await signIn(app, account.email, account.password, from(sameNet)))
    expect((await signIn(app, other.email, other.password, from(sameNet))).status).toBe(201)
  })

  test('IPv6 clients are grouped by /64', async () => {
    netSeq++
    const a = `2001:db8:${netSeq}:1::5`
    const sameNet = `2001:db8:${netSeq}:1:ffff:ffff:ffff:9`
    const nextNet = `2001:db8:${netSeq}:2::5`
    for (let i = 0; i < 5; i++) await signIn(app, account.email, 'wrong password', from(a))
    await retryAfter(await signIn(app, account.email, account.password, from(sameNet)))
    expect((await signIn(app, account.email, account.password, from(nextNet))).status).toBe(201)
  })

  test('an unknown email is backed off the same way as a known one', async () => {
    const [ip] = network()
    const ghost = newEmail('ghost')
    for (let i = 0; i < 5; i++) expect((await signIn(app, ghost, 'whatever it is', from(ip))).status).toBe(401)
    expect(await retryAfter(await signIn(app, ghost, 'whatever it is', from(ip)))).toBe(1)
  })

  test('failures are logged with the network but never the email or password', async () => {
    const [ip] = network()
    const marker = 'logged-password-marker'
    await signIn(app, account.email, marker, from(ip))
    const line = app.logs.findLast((l) => l.msg === 'sign-in failed' || l.message === 'sign-in failed')
    expect(line).toBeDefined()
    expect(JSON.stringify(line)).toContain(ip.replace(/\.7$/, '.0/24'))
    expect(app.rawLogs.some((l) => l.includes(marker) || l.includes(account.email))).toBe(false)
  })

  test('a forged left-most X-Forwarded-For entry does not move the client to another network', async () => {
    const [attacker] = network()
    for (let i = 0; i < 5; i++) await signIn(app, account.email, 'wrong password', from(attacker))
    await retryAfter(await signIn(app, account.email, account.password, from(`203.0.113.9, ${attacker}`)))
  })
})

describe('per-network and per-email limits on the public operations', () => {
  test(`signup start allows ${AUTH_LIMITS.start.perNetwork[0]} an hour per network, then 429; another network is unaffected`, async () => {
    const [ip] = network()
    const [elsewhere] = network()
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.start.perNetwork[0]; i++)
      expect((await post(app, '/auth/signup/start', { email: newEmail('net'), tenant_name: 'T' }, from(ip))).status).toBe(202)
    await refusedAfterBurst(t0, AUTH_LIMITS.start.perNetwork, () => post(app, '/auth/signup/start', { email: newEmail('net'), tenant_name: 'T' }, from(ip)))
    expect((await post(app, '/auth/signup/start', { email: newEmail('net'), tenant_name: 'T' }, from(elsewhere))).status).toBe(202)
  })

  test(`password-reset start allows ${AUTH_LIMITS.start.perNetwork[0]} an hour per network, then 429`, async () => {
    const [ip] = network()
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.start.perNetwork[0]; i++)
      expect((await post(app, '/auth/password-reset/start', { email: newEmail('net') }, from(ip))).status).toBe(202)
    await refusedAfterBurst(t0, AUTH_LIMITS.start.perNetwork, () => post(app, '/auth/password-reset/start', { email: newEmail('net') }, from(ip)))
  })

  test(`one email can be sent about ${AUTH_LIMITS.start.perEmail[0]} codes an hour, whatever networks ask and however long they wait for the cooldown`, async () => {
    const email = newEmail('per-email')
    const [limit, period] = AUTH_LIMITS.start.perEmail
    let passed = 0
    let refused: Response | null = null
    // Every 61 s (just past the resend cooldown), each time from a fresh network.
    for (let i = 0; i < 3 * limit && !refused; i++) {
      const res = await post(app, '/auth/signup/start', { email, tenant_name: 'T' }, from(network()[0]))
      if (res.status === 202) passed++
      else refused = res
      await advance(app, 61)
    }
    // The burst of `limit`, plus what refilled (one per period/limit seconds) while time passed.
    expect(passed).toBeGreaterThanOrEqual(limit)
    expect(passed).toBeLessThanOrEqual(limit + Math.ceil((passed * 61) / (period / limit)))
    expect(passed).toBeLessThan(2 * limit)
    await retryAfter(refused!)
  })

  test(`verify allows ${AUTH_LIMITS.verify.perEmail[0]} tries per email in 10 minutes, whatever networks ask`, async () => {
    const email = newEmail('verify-email')
    await requestCode(app, 'signup', email)
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.verify.perEmail[0]; i++)
      expect((await post(app, '/auth/signup/verify', { email, code: '000000' }, from(network()[0]))).status).toBe(401)
    await refusedAfterBurst(t0, AUTH_LIMITS.verify.perEmail, () => post(app, '/auth/signup/verify', { email, code: '000000' }, from(network()[0])))
  })

  test(`verify allows ${AUTH_LIMITS.verify.perNetwork[0]} tries per network in 10 minutes`, async () => {
    const [ip] = network()
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.verify.perNetwork[0]; i++)
      expect((await post(app, '/auth/password-reset/verify', { email: newEmail('v'), code: '000000' }, from(ip))).status).toBe(401)
    await refusedAfterBurst(t0, AUTH_LIMITS.verify.perNetwork, () =>
      post(app, '/auth/password-reset/verify', { email: newEmail('v'), code: '000000' }, from(ip)),
    )
  })

  test(`completing allows ${AUTH_LIMITS.complete.perNetwork[0]} tries per network an hour`, async () => {
    const [ip] = network()
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.complete.perNetwork[0]; i++)
      expect((await post(app, '/auth/signup/complete', { ticket: `made-up-${i}`, password: 'long enough passphrase' }, from(ip))).status).toBe(401)
    await refusedAfterBurst(t0, AUTH_LIMITS.complete.perNetwork, () =>
      post(app, '/auth/signup/complete', { ticket: 'made-up', password: 'long enough passphrase' }, from(ip)),
    )
  })

  test(`sign-in allows ${AUTH_LIMITS.signin.perNetwork[0]} tries per network in 10 minutes`, async () => {
    const [ip] = network()
    const t0 = app.deps.clock.nowUs()
    for (let i = 0; i < AUTH_LIMITS.signin.perNetwork[0]; i++) expect((await signIn(app, newEmail('spray'), 'password spraying', from(ip))).status).toBe(401)
    // 60 argon2 verifications may outlast one refill interval (10 s) on a loaded machine.
    await refusedAfterBurst(t0, AUTH_LIMITS.signin.perNetwork, () => signIn(app, account.email, account.password, from(ip)))
  })
})

describe('without TRUSTED_PROXIES', () => {
  let direct: AccountsApp
  let owner: Account
  beforeAll(async () => {
    direct = await startAccountsApp()
    owner = await signUp(direct)
  })
  afterAll(() => direct.stop())

  test('X-Forwarded-For is ignored: a client cannot pick its own network to escape the backoff', async () => {
    for (let i = 0; i < 5; i++) await signIn(direct, owner.email, 'wrong password', from('198.51.100.7'))
    await retryAfter(await signIn(direct, owner.email, owner.password, from('203.0.113.9')))
    const logged = direct.logs.filter((l) => l.route === '/api/v1/auth/sessions').map((l) => l.ip)
    expect(new Set(logged)).toEqual(new Set(['127.0.0.1']))
  })
})
