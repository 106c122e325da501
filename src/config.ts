import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { randomBytes } from 'node:crypto'

/**
 * The service's configuration, read from the environment once at start (docs/configuration.md).
 * Nothing else reads process.env: a value that is wrong stops startup with one
 * line naming the variable, instead of failing later at request time.
 */
export type Config = Readonly<{
  env: 'development' | 'production' | 'test'
  port: number
  publicUrl: string
  /** The SQLite file, or on PostgreSQL the URL without its password (for logs). */
  databasePath: string
  /** DATABASE_URL when it names PostgreSQL (it may hold a password: never logged); null on SQLite. */
  postgresUrl: string | null
  /** Connections each process keeps to PostgreSQL (DB_POOL_SIZE, default 10); unused on SQLite. */
  dbPoolSize: number
  dataDir: string
  secretKey: Buffer
  signupEnabled: boolean
  captcha: { secret: string | null; siteKey: string | null; verifyUrl: string }
  smtpUrl: string | null
  mailFrom: string
  paymentProviders: readonly string[]
  marketplaceAApiUrl: string
  marketplaceBApiUrl: string
  /** Percent of the platforms' published spacing between calls (100 in production; tests go lower). */
  marketplacePacePercent: number
  /** `updates`: how chat links are learned, getUpdates polling (default) or a webhook at PUBLIC_URL (TELEGRAM_UPDATES). */
  telegram: { botToken: string | null; apiUrl: string; updates: 'polling' | 'webhook' }
  testClock: boolean
  minAgentVersion: string
  /** Where the built agent executables and their manifest are (scripts/build-agent.ts; AGENT_BIN_DIR, default dist/agent of the checkout). */
  agentBinDir: string
  trustedProxies: readonly string[]
  bodyLimitBytes: number
  idempotencyRetentionSeconds: number
  logLevel: 'debug' | 'info' | 'warn' | 'error' | 'silent'
  jobsEnabled: boolean
  sessionIdleSeconds: number
  sessionAbsoluteSeconds: number
  metricsRetention: { rawHours: number; fiveMinuteDays: number; hourlyDays: number }
  gracePeriodHours: number
  nowpayments: { apiKey: string; ipnSecret: string; apiUrl: string } | null
  /** Requests a minute (burst the same), per process; 0 turns a limit off. See rate-limit.ts. */
  rateLimits: {
    tenantWritesPerMinute: number
    tokenRequestsPerMinute: number
    sessionUserRequestsPerMinute: number
    expensiveReadsPerMinute: number
    tenantExpensiveReadsPerMinute: number
  }
  /**
   * The demo's throwaway sign-in (DEMO_EMAIL, DEMO_PASSWORD; only `scripts/start --demo` sets them,
   * refused in production): GET /auth/config hands it to the web console, which signs straight in.
   */
  demoSignIn: { email: string; password: string } | null
  /** Seconds of silence before an agent session is pinged, and again before it is closed. */
  agentIdleTimeoutSeconds: number
  /** The live event stream (docs/events.md): its buffer's retention and bounds, and how streams are fed. */
  liveEvents: {
    retentionHours: number
    maxPerTenant: number
    heartbeatSeconds: number
    pollMs: number
    streamsPerTenant: number
  }
}>

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`)
  }
}

type Env = Record<string, string | undefined>

const KNOWN_PAYMENT_PROVIDERS = ['sandbox', 'nowpayments']

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  const v = raw.trim().toLowerCase()
  if (['1', 'true', 'yes', 'on'].includes(v)) return true
  if (['0', 'false', 'no', 'off'].includes(v)) return false
  throw new ConfigError(name, `expected true or false, got "${raw}"`)
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `expected a whole number, got "${raw}"`)
  const n = Number(raw.trim())
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`)
  return n
}

function httpUrl(env: Env, name: string, fallback: string): string {
  const raw = env[name] || fallback
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new ConfigError(name, `not a valid URL: "${raw}"`)
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(name, `must be an http(s) URL, got "${raw}"`)
  return raw.replace(/\/+$/, '')
}

function required(env: Env, name: string, why: string): string {
  const v = env[name]?.trim()
  if (!v) throw new ConfigError(name, `is required because ${why}`)
  return v
}

function semver(env: Env, name: string, fallback: string): string {
  const raw = (env[name] || fallback).trim()
  if (!/^\d+\.\d+\.\d+$/.test(raw)) throw new ConfigError(name, `expected a version like 1.0.0, got "${raw}"`)
  return raw
}

function databasePath(raw: string): string {
  if (raw.startsWith('postgres://') || raw.startsWith('postgresql://')) return postgresUrl(raw)
  if (!raw.startsWith('file:')) throw new ConfigError('DATABASE_URL', `expected file:<path>, got "${raw}"`)
  const path = raw.slice('file:'.length)
  if (path === '') throw new ConfigError('DATABASE_URL', 'the file path is empty')
  return path === ':memory:' ? path : resolve(path)
}

/** A postgres:// URL as Bun's client takes it: a host and a database name; shown without its password. */
function postgresUrl(raw: string): string {
  let u: URL
  try {
    u = new URL(raw)
  } catch {
    throw new ConfigError('DATABASE_URL', 'not a valid postgres:// URL')
  }
  if (!u.hostname) throw new ConfigError('DATABASE_URL', 'the PostgreSQL URL names no host')
  if (u.pathname.replace(/^\//, '') === '') throw new ConfigError('DATABASE_URL', 'the PostgreSQL URL names no database')
  u.password = ''
  u.search = ''
  return u.toString()
}

/** SECRET_KEY is hex or base64 of at least 32 bytes; when absent one is generated once into the data dir. */
function secretKey(env: Env, dataDir: string): Buffer {
  const raw = env.SECRET_KEY?.trim()
  if (raw) {
    const bytes = /^[0-9a-fA-F]+$/.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64')
    if (bytes.length < 32) throw new ConfigError('SECRET_KEY', 'must encode at least 32 bytes (64 hex characters)')
    return bytes
  }
  const file = resolve(dataDir, 'secret.key')
  if (existsSync(file)) {
    const bytes = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex')
    if (bytes.length < 32) throw new ConfigError('SECRET_KEY', `${file} holds fewer than 32 bytes`)
    return bytes
  }
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  const bytes = randomBytes(32)
  // Written to a temporary name and linked into place: a process starting at the same moment
  // either wins the link or reads the other's complete key, never half a file.
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
  writeFileSync(tmp, bytes.toString('hex') + '\n', { mode: 0o600 })
  try {
    linkSync(tmp, file)
    return bytes
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
    return secretKey(env, dataDir)
  } finally {
    unlinkSync(tmp)
  }
}

function telegramUpdates(env: Record<string, string | undefined>): 'polling' | 'webhook' {
  const v = (env.TELEGRAM_UPDATES ?? '').trim() || 'polling'
  if (v !== 'polling' && v !== 'webhook') throw new ConfigError('TELEGRAM_UPDATES', `expected polling or webhook, got "${v}"`)
  if (v === 'webhook' && !env.TELEGRAM_BOT_TOKEN?.trim()) throw new ConfigError('TELEGRAM_UPDATES', 'webhook needs TELEGRAM_BOT_TOKEN')
  return v
}

export function loadConfig(env: Env = process.env): Config {
  const nodeEnv = env.NODE_ENV || 'development'
  if (!['development', 'production', 'test'].includes(nodeEnv)) throw new ConfigError('NODE_ENV', `expected development, production or test, got "${nodeEnv}"`)
  const production = nodeEnv === 'production'
  const port = int(env, 'PORT', 8080, 0, 65535)
  const publicUrl = httpUrl(env, 'PUBLIC_URL', `http://localhost:${port}`)
  if (new URL(publicUrl).pathname !== '/') throw new ConfigError('PUBLIC_URL', 'must be an origin without a path')
  const dataDir = resolve(env.DATA_DIR || './data')
  const databaseUrl = env.DATABASE_URL || 'file:./data/gpuhq.db'
  const dbPath = databasePath(databaseUrl)

  const testClock = bool(env, 'TEST_CLOCK', false)
  if (testClock && production) throw new ConfigError('TEST_CLOCK', 'the test clock is refused in production')

  // Unset means no provider (top-ups answer 503); the sandbox runs only when named here.
  const providers = (env.PAYMENT_PROVIDERS ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
  for (const p of providers)
    if (!KNOWN_PAYMENT_PROVIDERS.includes(p))
      throw new ConfigError('PAYMENT_PROVIDERS', `unknown provider "${p}" (known: ${KNOWN_PAYMENT_PROVIDERS.join(', ')})`)
  if (production && providers.includes('sandbox')) throw new ConfigError('PAYMENT_PROVIDERS', 'the sandbox provider is refused in production')
  const marketplacePacePercent = int(env, 'MARKETPLACE_PACE_PERCENT', 100, 1, 100)
  // Calling a platform faster than it publishes would get the owner's key throttled or banned.
  if (production && marketplacePacePercent !== 100)
    throw new ConfigError('MARKETPLACE_PACE_PERCENT', "production paces at the platforms' published limits (100)")

  const smtpUrl = env.SMTP_URL?.trim() || null
  if (smtpUrl && !/^smtps?:\/\//.test(smtpUrl)) throw new ConfigError('SMTP_URL', 'expected smtp:// or smtps://')
  const mailFrom = env.MAIL_FROM?.trim() || `gpuhq <no-reply@${new URL(publicUrl).hostname}>`

  const demoEmail = env.DEMO_EMAIL?.trim() || null
  const demoPassword = env.DEMO_PASSWORD || null
  if ((demoEmail === null) !== (demoPassword === null))
    throw new ConfigError(demoEmail ? 'DEMO_PASSWORD' : 'DEMO_EMAIL', 'DEMO_EMAIL and DEMO_PASSWORD go together (scripts/start --demo sets both)')
  if (demoEmail && production) throw new ConfigError('DEMO_EMAIL', 'a published demo sign-in is refused in production')

  const logLevel = (env.LOG_LEVEL || 'info') as Config['logLevel']
  if (!['debug', 'info', 'warn', 'error', 'silent'].includes(logLevel))
    throw new ConfigError('LOG_LEVEL', `expected debug, info, warn, error or silent, got "${logLevel}"`)

  return Object.freeze({
    env: nodeEnv as Config['env'],
    port,
    publicUrl,
    databasePath: dbPath,
    postgresUrl: /^postgres(ql)?:\/\//.test(databaseUrl) ? databaseUrl : null,
    dbPoolSize: int(env, 'DB_POOL_SIZE', 10, 1, 200),
    dataDir,
    secretKey: secretKey(env, dataDir),
    signupEnabled: bool(env, 'SIGNUP_ENABLED', false),
    captcha: {
      secret: env.CAPTCHA_SECRET?.trim() || null,
      siteKey: env.CAPTCHA_SITE_KEY?.trim() || null,
      verifyUrl: httpUrl(env, 'CAPTCHA_VERIFY_URL', 'https://challenges.cloudflare.com/turnstile/v0/siteverify'),
    },
    smtpUrl,
    mailFrom,
    paymentProviders: Object.freeze(providers),
    marketplaceAApiUrl: httpUrl(env, 'MARKETPLACE_A_API_URL', 'https://console.vast.ai'),
    marketplaceBApiUrl: httpUrl(env, 'MARKETPLACE_B_API_URL', 'https://api.clore.ai'),
    marketplacePacePercent,
    telegram: {
      botToken: env.TELEGRAM_BOT_TOKEN?.trim() || null,
      apiUrl: httpUrl(env, 'TELEGRAM_API_URL', 'https://api.telegram.org'),
      updates: telegramUpdates(env),
    },
    testClock,
    demoSignIn: demoEmail && demoPassword ? { email: demoEmail, password: demoPassword } : null,
    minAgentVersion: semver(env, 'MIN_AGENT_VERSION', '1.0.0'),
    agentBinDir: resolve(env.AGENT_BIN_DIR || resolve(import.meta.dir, '../dist/agent')),
    trustedProxies: Object.freeze(
      (env.TRUSTED_PROXIES || '')
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean),
    ),
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    idempotencyRetentionSeconds: int(env, 'IDEMPOTENCY_RETENTION_SECONDS', 24 * 3600, 24 * 3600, 30 * 24 * 3600),
    logLevel,
    jobsEnabled: bool(env, 'JOBS_ENABLED', true),
    sessionIdleSeconds: int(env, 'SESSION_IDLE_SECONDS', 7 * 86400, 300, 365 * 86400),
    sessionAbsoluteSeconds: int(env, 'SESSION_ABSOLUTE_SECONDS', 30 * 86400, 300, 365 * 86400),
    metricsRetention: {
      rawHours: int(env, 'METRICS_RAW_RETENTION_HOURS', 48, 2, 24 * 90),
      fiveMinuteDays: int(env, 'METRICS_5M_RETENTION_DAYS', 35, 3, 3650),
      hourlyDays: int(env, 'METRICS_1H_RETENTION_DAYS', 730, 7, 36500),
    },
    gracePeriodHours: int(env, 'GRACE_PERIOD_HOURS', 72, 0, 24 * 90),
    nowpayments: providers.includes('nowpayments')
      ? {
          apiKey: required(env, 'NOWPAYMENTS_API_KEY', 'the nowpayments provider is enabled'),
          ipnSecret: required(env, 'NOWPAYMENTS_IPN_SECRET', 'the nowpayments provider is enabled'),
          apiUrl: httpUrl(env, 'NOWPAYMENTS_API_URL', 'https://api.nowpayments.io'),
        }
      : null,
    rateLimits: {
      tenantWritesPerMinute: int(env, 'RATE_LIMIT_TENANT_WRITES_PER_MINUTE', 1200, 0, 1_000_000),
      tokenRequestsPerMinute: int(env, 'RATE_LIMIT_TOKEN_PER_MINUTE', 2400, 0, 1_000_000),
      sessionUserRequestsPerMinute: int(env, 'RATE_LIMIT_SESSION_USER_PER_MINUTE', 2400, 0, 1_000_000),
      expensiveReadsPerMinute: int(env, 'RATE_LIMIT_EXPENSIVE_READS_PER_MINUTE', 20, 0, 1_000_000),
      tenantExpensiveReadsPerMinute: int(env, 'RATE_LIMIT_TENANT_EXPENSIVE_READS_PER_MINUTE', 40, 0, 1_000_000),
    },
    agentIdleTimeoutSeconds: int(env, 'AGENT_IDLE_TIMEOUT_SECONDS', 60, 4, 960),
    liveEvents: {
      retentionHours: int(env, 'LIVE_EVENTS_RETENTION_HOURS', 24, 1, 24 * 30),
      maxPerTenant: int(env, 'LIVE_EVENTS_MAX_PER_TENANT', 10_000, 100, 1_000_000),
      // Bun closes a connection that sent nothing for 10 s: a heartbeat must come sooner.
      heartbeatSeconds: int(env, 'LIVE_STREAM_HEARTBEAT_SECONDS', 5, 1, 9),
      pollMs: int(env, 'LIVE_STREAM_POLL_MS', 1000, 50, 60_000),
      streamsPerTenant: int(env, 'LIVE_STREAMS_PER_TENANT', 20, 1, 1000),
    },
  })
}
