import { describe, expect, test } from 'bun:test'
import { createLogger, redact, type LogLevel } from '../../src/platform/logger'
import { generateSecret, type SecretPrefix } from '../../src/platform/secrets'

const PREFIXES: SecretPrefix[] = ['gpuhq_pat_', 'gpuhq_init_', 'gpuhq_agt_', 'gpuhq_mcp_']

function capture(level: LogLevel) {
  const lines: string[] = []
  const log = createLogger(
    level,
    () => '2026-11-22T14:20:00.000000Z',
    (line) => lines.push(line),
  )
  return { log, lines }
}

describe('redaction', () => {
  test.each(PREFIXES)('a %s secret is cut to its prefix and four characters', (prefix) => {
    const token = generateSecret(prefix)
    const shown = `${prefix}${token.slice(prefix.length, prefix.length + 4)}…`
    expect(redact(`Authorization: Bearer ${token}`)).toBe(`Authorization: Bearer ${shown}`)
  })

  test('every secret in a text is masked, and the text around them is kept', () => {
    const a = generateSecret('gpuhq_pat_')
    const b = generateSecret('gpuhq_agt_')
    const out = redact(`first=${a}&second=${b}.`)
    expect(out).toBe(`first=${a.slice(0, 14)}…&second=${b.slice(0, 14)}….`)
  })

  test('text with no secret in it is unchanged', () => {
    for (const text of ['plain', 'gpuhq_pat_', 'gpuhq_pat_abc', 'gpuhq_other_abcdefgh', '{"a":1}']) expect(redact(text)).toBe(text)
  })
})

describe('log records', () => {
  test('a secret never reaches the log, wherever it hides in the record', () => {
    const { log, lines } = capture('debug')
    const secrets = PREFIXES.map((p) => generateSecret(p))
    const [pat, init, agt, mcp] = secrets as [string, string, string, string]
    log.info(`token ${pat} created`)
    log.warn('nested', { request: { headers: { authorization: `Bearer ${init}` } }, list: ['x', agt] })
    log.error('failure', { error: new Error(`could not verify ${mcp}`) })
    log.debug('as a key', { [pat]: true, n: 10n })
    const all = lines.join('\n')
    for (const s of secrets) {
      expect(all).not.toContain(s)
      expect(all).not.toContain(s.slice(-20))
      expect(all).toContain(s.slice(0, s.indexOf('_', 6) + 5) + '…')
    }
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow()
  })

  test('a record is one JSON line with time, level, message and fields', () => {
    const { log, lines } = capture('info')
    log.info('request', { status: 201, path: '/api/v1/tokens' })
    expect(lines).toHaveLength(1)
    expect(lines[0]).not.toContain('\n')
    expect(JSON.parse(lines[0]!)).toEqual({ time: '2026-11-22T14:20:00.000000Z', level: 'info', msg: 'request', status: 201, path: '/api/v1/tokens' })
  })

  test('an error field keeps its name and message; a bigint field is written as text', () => {
    const { log, lines } = capture('info')
    log.error('boom', { error: new TypeError('bad thing'), amount: 9007199254740993n })
    const record = JSON.parse(lines[0]!)
    expect(record.error.name).toBe('TypeError')
    expect(record.error.message).toBe('bad thing')
    expect(record.amount).toBe('9007199254740993')
  })

  test.each([
    ['debug', ['debug', 'info', 'warn', 'error']],
    ['info', ['info', 'warn', 'error']],
    ['warn', ['warn', 'error']],
    ['error', ['error']],
    ['silent', []],
  ] as const)('at level %s only %p are written', (level, written) => {
    const { log, lines } = capture(level)
    log.debug('d')
    log.info('i')
    log.warn('w')
    log.error('e')
    expect(lines.map((l) => JSON.parse(l).level)).toEqual([...written])
  })
})

describe('the service writer (batchedStdout)', () => {
  const fixture = new URL('./fixtures/log-lines.ts', import.meta.url).pathname
  /** stdout and stderr interleaved as the child wrote them (one pipe for both). */
  async function run(...steps: string[]) {
    const child = Bun.spawn(['sh', '-c', `exec "${process.execPath}" "${fixture}" "$@" 2>&1`, 'sh', ...steps], { stdout: 'pipe' })
    const out = await new Response(child.stdout).text()
    await child.exited
    return out
      .trim()
      .split('\n')
      .map((l) => (l.startsWith('{') ? `${JSON.parse(l).level}:${JSON.parse(l).n}` : l))
  }

  test('info lines of one turn are written together at its end, in order', async () => {
    expect(await run('info:3', 'tick', 'info:1')).toEqual(['before-tick', 'info:1', 'info:2', 'info:3', 'after-tick', 'info:4'])
  })

  test('a warning is written at once, after every line held before it', async () => {
    expect(await run('info:2', 'warn', 'info:1')).toEqual(['info:1', 'info:2', 'warn:3', 'after-warn', 'info:4'])
  })

  test('held lines are written when the process exits at once', async () => {
    expect(await run('info:5', 'exit')).toEqual(['info:1', 'info:2', 'info:3', 'info:4', 'info:5'])
  })

  test('held lines are written when an uncaught exception ends the process', async () => {
    expect((await run('info:2', 'throw')).filter((l) => l.startsWith('info:'))).toEqual(['info:1', 'info:2'])
  })

  test('more than 64 KiB is written without waiting for the turn to end', async () => {
    const lines = await run('info:2000', 'tick')
    const before = lines.indexOf('before-tick')
    expect(before).toBeGreaterThan(0)
    expect(lines.slice(0, before).every((l) => l.startsWith('info:'))).toBe(true)
    expect(lines.filter((l) => l.startsWith('info:'))).toHaveLength(2000)
  })
})
