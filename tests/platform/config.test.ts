import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { ConfigError, loadConfig } from '../../src/config'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpuhq-config-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const KEY = 'c'.repeat(64)
/** Never process.env: every load gets its own environment and a temp data dir. */
const load = (env: Record<string, string | undefined> = {}) => loadConfig({ DATA_DIR: dir, SECRET_KEY: KEY, ...env })

function configError(env: Record<string, string | undefined>): ConfigError {
  try {
    load(env)
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError)
    return e as ConfigError
  }
  throw new Error('expected a ConfigError')
}

describe('the demo sign-in (docs/console.md "The demo")', () => {
  test('is absent unless both DEMO_EMAIL and DEMO_PASSWORD are set, and then read as given', () => {
    expect(load().demoSignIn).toBeNull()
    expect(load({ DEMO_EMAIL: 'demo@example.com', DEMO_PASSWORD: 'demo-abcd' }).demoSignIn).toEqual({ email: 'demo@example.com', password: 'demo-abcd' })
    expect(configError({ DEMO_EMAIL: 'demo@example.com' }).variable).toBe('DEMO_PASSWORD')
    expect(configError({ DEMO_PASSWORD: 'demo-abcd' }).variable).toBe('DEMO_EMAIL')
  })

  test('is refused in production', () => {
    expect(configError({ NODE_ENV: 'production', DEMO_EMAIL: 'demo@example.com', DEMO_PASSWORD: 'demo-abcd' }).message).toContain('refused in production')
  })
})

describe('marketplace pacing', () => {
  test("paces at the platforms' published limits unless told otherwise", () => {
    expect(load().marketplacePacePercent).toBe(100)
    expect(load({ MARKETPLACE_PACE_PERCENT: '1' }).marketplacePacePercent).toBe(1)
  })
})

describe('loadConfig defaults', () => {
  test('match the documented defaults outside production', () => {
    const c = load()
    expect(c.env).toBe('development')
    expect(c.port).toBe(8080)
    expect(c.publicUrl).toBe('http://localhost:8080')
    expect(c.databasePath).toBe(resolve('./data/gpuhq.db'))
    expect(c.signupEnabled).toBe(false)
    // docs/configuration.md: PAYMENT_PROVIDERS unset means no provider; the sandbox runs only when named.
    expect(c.paymentProviders).toEqual([])
    expect(c.testClock).toBe(false)
    expect(c.minAgentVersion).toBe('1.0.0')
    expect(c.captcha.secret).toBeNull()
    expect(c.captcha.verifyUrl).toBe('https://challenges.cloudflare.com/turnstile/v0/siteverify')
    expect(c.smtpUrl).toBeNull()
    expect(c.marketplaceAApiUrl).toBe('https://console.vast.ai')
    expect(c.marketplaceBApiUrl).toBe('https://api.clore.ai')
    expect(c.telegram.botToken).toBeNull()
    expect(c.bodyLimitBytes).toBe(1024 * 1024)
    expect(c.idempotencyRetentionSeconds).toBeGreaterThanOrEqual(24 * 3600)
    expect(c.trustedProxies).toEqual([])
  })

  const NOWPAYMENTS = { NOWPAYMENTS_API_KEY: 'k', NOWPAYMENTS_IPN_SECRET: 's' }

  test('production enables no payment provider unless told to', () => {
    expect(load({ NODE_ENV: 'production' }).paymentProviders).toEqual([])
    expect(load({ NODE_ENV: 'production', PAYMENT_PROVIDERS: 'nowpayments', ...NOWPAYMENTS }).paymentProviders).toEqual(['nowpayments'])
  })

  test('the nowpayments provider needs its API key and IPN secret, named when missing', () => {
    expect(() => load({ PAYMENT_PROVIDERS: 'nowpayments' })).toThrow(/^NOWPAYMENTS_API_KEY: is required/)
    expect(() => load({ PAYMENT_PROVIDERS: 'nowpayments', NOWPAYMENTS_API_KEY: 'k' })).toThrow(/^NOWPAYMENTS_IPN_SECRET: is required/)
    expect(load({ PAYMENT_PROVIDERS: 'nowpayments', ...NOWPAYMENTS }).nowpayments).toEqual({
      apiKey: 'k',
      ipnSecret: 's',
      apiUrl: 'https://api.nowpayments.io',
    })
  })

  test('the test environment enables the sandbox only when PAYMENT_PROVIDERS names it', () => {
    expect(load({ NODE_ENV: 'test' }).paymentProviders).toEqual([])
    expect(load({ NODE_ENV: 'test', PAYMENT_PROVIDERS: 'sandbox' }).paymentProviders).toEqual(['sandbox'])
  })

  test('PUBLIC_URL follows PORT when unset, and loses a trailing slash when set', () => {
    expect(load({ PORT: '9090' }).publicUrl).toBe('http://localhost:9090')
    expect(load({ PUBLIC_URL: 'https://gpuhq.example.com/' }).publicUrl).toBe('https://gpuhq.example.com')
  })

  test('explicit values are read and typed', () => {
    const c = load({
      PORT: '3000',
      SIGNUP_ENABLED: 'true',
      TEST_CLOCK: 'yes',
      PAYMENT_PROVIDERS: 'sandbox, nowpayments',
      ...NOWPAYMENTS,
      MIN_AGENT_VERSION: '2.3.4',
      TRUSTED_PROXIES: '10.0.0.1, 10.0.0.2',
      DATABASE_URL: `file:${join(dir, 'x.db')}`,
    })
    expect(c.port).toBe(3000)
    expect(c.signupEnabled).toBe(true)
    expect(c.testClock).toBe(true)
    expect(c.paymentProviders).toEqual(['sandbox', 'nowpayments'])
    expect(c.minAgentVersion).toBe('2.3.4')
    expect(c.trustedProxies).toEqual(['10.0.0.1', '10.0.0.2'])
    expect(c.databasePath).toBe(join(dir, 'x.db'))
    expect(Object.isFrozen(c)).toBe(true)
  })

  test('a postgres:// DATABASE_URL selects PostgreSQL, and only its password-free form is shown', () => {
    const c = load({ DATABASE_URL: 'postgres://gpuhq:s3cret@db.internal:5433/gpuhq?sslmode=require' })
    expect(c.postgresUrl).toBe('postgres://gpuhq:s3cret@db.internal:5433/gpuhq?sslmode=require')
    expect(c.databasePath).toBe('postgres://gpuhq@db.internal:5433/gpuhq')
    expect(load({ DATABASE_URL: 'postgresql://db/gpuhq' }).postgresUrl).toBe('postgresql://db/gpuhq')
    expect(load({}).postgresUrl).toBeNull()
  })

  test('a hex or base64 SECRET_KEY of 32 bytes is decoded', () => {
    expect(load({ SECRET_KEY: 'ab'.repeat(32) }).secretKey.equals(Buffer.alloc(32, 0xab))).toBe(true)
    expect(load({ SECRET_KEY: Buffer.alloc(32, 7).toString('base64') }).secretKey.equals(Buffer.alloc(32, 7))).toBe(true)
  })
})

describe('loadConfig refuses invalid values, naming the variable first', () => {
  const cases: [string, Record<string, string>][] = [
    ['PORT', { PORT: 'abc' }],
    ['PORT', { PORT: '70000' }],
    ['PORT', { PORT: '-1' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'ftp://x' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'not a url' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'https://example.com/app' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgres://user:pw@localhost' }],
    ['DATABASE_URL', { DATABASE_URL: 'postgresql://' }],
    ['DATABASE_URL', { DATABASE_URL: 'mysql://localhost/gpuhq' }],
    ['DATABASE_URL', { DATABASE_URL: 'file:' }],
    ['NODE_ENV', { NODE_ENV: 'staging' }],
    ['TEST_CLOCK', { TEST_CLOCK: 'true', NODE_ENV: 'production' }],
    ['TEST_CLOCK', { TEST_CLOCK: 'sometimes' }],
    ['PAYMENT_PROVIDERS', { PAYMENT_PROVIDERS: 'sandbox', NODE_ENV: 'production' }],
    ['PAYMENT_PROVIDERS', { PAYMENT_PROVIDERS: 'nowpayments,sandbox', NODE_ENV: 'production' }],
    ['PAYMENT_PROVIDERS', { PAYMENT_PROVIDERS: 'paypal' }],
    ['SIGNUP_ENABLED', { SIGNUP_ENABLED: 'maybe' }],
    ['MIN_AGENT_VERSION', { MIN_AGENT_VERSION: '1.0' }],
    ['MIN_AGENT_VERSION', { MIN_AGENT_VERSION: 'v1.0.0' }],
    ['SECRET_KEY', { SECRET_KEY: 'abcd' }],
    ['SECRET_KEY', { SECRET_KEY: 'a'.repeat(62) }],
    ['SECRET_KEY', { SECRET_KEY: Buffer.alloc(31).toString('base64') }],
    ['SMTP_URL', { SMTP_URL: 'http://mail' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['MARKETPLACE_A_API_URL', { MARKETPLACE_A_API_URL: 'file:///etc/passwd' }],
    ['MARKETPLACE_PACE_PERCENT', { MARKETPLACE_PACE_PERCENT: '0' }],
    ['MARKETPLACE_PACE_PERCENT', { MARKETPLACE_PACE_PERCENT: '150' }],
    ['MARKETPLACE_PACE_PERCENT', { NODE_ENV: 'production', MARKETPLACE_PACE_PERCENT: '10' }],
  ]
  test.each(cases.map(([v, env]) => [v, JSON.stringify(env), env] as const))('%s is blamed for %s', (variable, _shown, env) => {
    const e = configError(env)
    expect(e.variable).toBe(variable)
    expect(e.message.startsWith(`${variable}: `)).toBe(true)
    expect(e.message).not.toContain('\n')
  })

  test('a refused production setting does not leave a generated key behind', () => {
    expect(() => loadConfig({ DATA_DIR: dir, NODE_ENV: 'production', TEST_CLOCK: 'true' })).toThrow(ConfigError)
    expect(existsSync(join(dir, 'secret.key'))).toBe(false)
  })
})

describe('a SECRET_KEY generated on first start', () => {
  test('is written to DATA_DIR/secret.key, readable by the owner only, and reused on the next load', () => {
    const dataDir = join(dir, 'nested', 'data')
    const first = loadConfig({ DATA_DIR: dataDir })
    const file = join(dataDir, 'secret.key')
    expect(existsSync(file)).toBe(true)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(first.secretKey.length).toBe(32)
    expect(readFileSync(file, 'utf8').trim()).toBe(first.secretKey.toString('hex'))
    const second = loadConfig({ DATA_DIR: dataDir })
    expect(second.secretKey.equals(first.secretKey)).toBe(true)
  })

  test('two data dirs get two different keys', () => {
    const a = loadConfig({ DATA_DIR: join(dir, 'a') })
    const b = loadConfig({ DATA_DIR: join(dir, 'b') })
    expect(a.secretKey.equals(b.secretKey)).toBe(false)
  })

  test('a key file holding too few bytes is refused, naming SECRET_KEY', () => {
    writeFileSync(join(dir, 'secret.key'), 'abcd\n')
    expect(() => loadConfig({ DATA_DIR: dir })).toThrow(/^SECRET_KEY: /)
  })

  test('an explicit SECRET_KEY wins and writes no file', () => {
    const c = loadConfig({ DATA_DIR: dir, SECRET_KEY: KEY })
    expect(c.secretKey.equals(Buffer.from(KEY, 'hex'))).toBe(true)
    expect(existsSync(join(dir, 'secret.key'))).toBe(false)
  })
})
