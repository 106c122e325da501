import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { deriveKey, generateSecret, hashSecret, hasValidChecksum, maskSecret, open, safeEqual, seal, type SecretPrefix } from '../../src/platform/secrets'

const PREFIXES: SecretPrefix[] = ['gpuhq_pat_', 'gpuhq_init_', 'gpuhq_agt_', 'gpuhq_mcp_']
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_-.'
const root = Buffer.alloc(32, 1)

describe('generated secrets', () => {
  test.each(PREFIXES)('a %s secret is the prefix, 40 random base62 characters and a valid 6-character checksum', (prefix) => {
    for (let i = 0; i < 200; i++) {
      const token = generateSecret(prefix)
      expect(token.startsWith(prefix)).toBe(true)
      expect(token.slice(prefix.length)).toMatch(/^[0-9A-Za-z]{46}$/)
      expect(hasValidChecksum(token, prefix)).toBe(true)
    }
  })

  test('a secret is not recognised under another prefix', () => {
    for (const prefix of PREFIXES) for (const other of PREFIXES) if (other !== prefix) expect(hasValidChecksum(generateSecret(prefix), other)).toBe(false)
  })

  test('any single-character change to a secret fails its checksum offline', () => {
    const edit = fc.record({
      prefix: fc.constantFrom(...PREFIXES),
      at: fc.nat(),
      char: fc.constantFrom(...ALPHABET),
    })
    fc.assert(
      fc.property(edit, ({ prefix, at, char }) => {
        const token = generateSecret(prefix)
        const i = at % token.length
        fc.pre(token[i] !== char)
        const mutated = token.slice(0, i) + char + token.slice(i + 1)
        return !hasValidChecksum(mutated, prefix)
      }),
      { numRuns: 3000 },
    )
  })

  test('a truncated, lengthened or re-cased secret fails its checksum', () => {
    const token = generateSecret('gpuhq_pat_')
    expect(hasValidChecksum(token.slice(0, -1), 'gpuhq_pat_')).toBe(false)
    expect(hasValidChecksum(token + 'a', 'gpuhq_pat_')).toBe(false)
    expect(hasValidChecksum(token.toUpperCase(), 'gpuhq_pat_')).toBe(false)
    expect(hasValidChecksum('', 'gpuhq_pat_')).toBe(false)
  })

  test('ten thousand secrets never collide', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 10_000; i++) seen.add(generateSecret('gpuhq_pat_').slice('gpuhq_pat_'.length, -6))
    expect(seen.size).toBe(10_000)
  })
})

describe('stored and shown forms', () => {
  test('the stored form is the hex SHA-256 of the secret', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
    const token = generateSecret('gpuhq_agt_')
    expect(hashSecret(token)).toMatch(/^[0-9a-f]{64}$/)
    expect(hashSecret(token)).not.toContain(token.slice(10, 20))
  })

  test.each(PREFIXES)('a masked %s secret shows only its prefix and four characters', (prefix) => {
    const token = generateSecret(prefix)
    const masked = maskSecret(token)
    expect(masked).toBe(`${prefix}${token.slice(prefix.length, prefix.length + 4)}…`)
    expect(masked).not.toContain(token.slice(prefix.length, prefix.length + 5))
  })

  test('a string without a known prefix is masked to its first four characters', () => {
    expect(maskSecret('abcdefgh')).toBe('abcd…')
  })
})

describe('safeEqual', () => {
  test('is true only for identical strings', () => {
    const token = generateSecret('gpuhq_mcp_')
    expect(safeEqual(token, `${token}`)).toBe(true)
    expect(safeEqual('', '')).toBe(true)
    expect(safeEqual(token, token.slice(0, -1) + (token.endsWith('a') ? 'b' : 'a'))).toBe(false)
    expect(safeEqual(token, token.slice(0, -1))).toBe(false)
    expect(safeEqual('a', 'a\0')).toBe(false)
    expect(safeEqual('abc', '')).toBe(false)
  })

  test('agrees with === for any two strings', () => {
    fc.assert(fc.property(fc.string(), fc.string(), (a, b) => safeEqual(a, b) === (a === b)))
    fc.assert(fc.property(fc.string(), (a) => safeEqual(a, a)))
  })
})

describe('sealed boxes', () => {
  const key = deriveKey(root, 'idempotency-responses')

  test('derived keys are 32 bytes, stable, and differ by purpose and by root', () => {
    expect(key.length).toBe(32)
    expect(deriveKey(root, 'idempotency-responses').equals(key)).toBe(true)
    expect(deriveKey(root, 'cursor').equals(key)).toBe(false)
    expect(deriveKey(Buffer.alloc(32, 2), 'idempotency-responses').equals(key)).toBe(false)
  })

  test('what is sealed opens to the same bytes, for text and binary alike', () => {
    expect(open(key, seal(key, 'the secret', 'ctx'), 'ctx').toString()).toBe('the secret')
    const bytes = Buffer.from([0, 255, 1, 254])
    expect(open(key, seal(key, bytes)).equals(bytes)).toBe(true)
    expect(open(key, seal(key, '')).length).toBe(0)
  })

  test('a box does not show its plaintext, and sealing twice gives different boxes', () => {
    const a = seal(key, 'gpuhq_pat_plaintext', 'ctx')
    const b = seal(key, 'gpuhq_pat_plaintext', 'ctx')
    expect(a.toString('latin1')).not.toContain('plaintext')
    expect(a.equals(b)).toBe(false)
  })

  test('opening with the wrong key or the wrong context throws', () => {
    const box = seal(key, 'the secret', 'tenant-a')
    expect(() => open(deriveKey(root, 'cursor'), box, 'tenant-a')).toThrow()
    expect(() => open(key, box, 'tenant-b')).toThrow()
    expect(() => open(key, box)).toThrow()
  })

  test('a box with any byte changed, or cut short, throws', () => {
    const box = seal(key, 'the secret', 'ctx')
    for (let i = 0; i < box.length; i++) {
      const bad = Buffer.from(box)
      bad[i] = bad[i]! ^ 0x01
      expect(() => open(key, bad, 'ctx')).toThrow()
    }
    expect(() => open(key, box.subarray(0, 27), 'ctx')).toThrow()
  })
})
