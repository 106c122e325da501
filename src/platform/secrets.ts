import { createCipheriv, createDecipheriv, createHash, createHmac, hkdfSync, randomBytes, randomInt, timingSafeEqual } from 'node:crypto'

/**
 * Secrets and keys (docs/access.md): every secret is random (≥160 bits), carries a short
 * checksum so a leaked one can be recognised offline, is stored only as a hash, compared in
 * constant time and shown once. Everything at rest that must be readable again is sealed with a
 * key derived from SECRET_KEY for one purpose only.
 */

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'
/** 40 base62 characters carry 238 bits. */
const RANDOM_CHARS = 40
const CHECKSUM_CHARS = 6

export type SecretPrefix = 'gpuhq_pat_' | 'gpuhq_init_' | 'gpuhq_agt_' | 'gpuhq_mcp_' | 'gpuhq_mcpat_' | 'gpuhq_mcprt_'

function base62(n: number, width: number): string {
  let out = ''
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out
    n = Math.floor(n / 62)
  }
  return out
}

function checksum(body: string): string {
  return base62(Bun.hash.crc32(body) >>> 0, CHECKSUM_CHARS)
}

export function generateSecret(prefix: SecretPrefix): string {
  let body = ''
  for (let i = 0; i < RANDOM_CHARS; i++) body += BASE62[randomInt(62)]
  return `${prefix}${body}${checksum(prefix + body)}`
}

/** True when `token` has the shape of a secret with this prefix and its checksum holds. */
export function hasValidChecksum(token: string, prefix: SecretPrefix): boolean {
  if (!token.startsWith(prefix) || token.length !== prefix.length + RANDOM_CHARS + CHECKSUM_CHARS) return false
  const rest = token.slice(prefix.length)
  if (!/^[0-9A-Za-z]+$/.test(rest)) return false
  const body = rest.slice(0, RANDOM_CHARS)
  return safeEqual(checksum(prefix + body), rest.slice(RANDOM_CHARS))
}

/** The stored form of a secret: SHA-256, hex. High-entropy secrets need no salt or slow hash. */
export function hashSecret(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

/** Constant-time string comparison (the lengths may differ without leaking where). */
export function safeEqual(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest()
  const hb = createHash('sha256').update(b).digest()
  return timingSafeEqual(ha, hb) && a.length === b.length
}

/** What a log line or a list may show of a secret: its prefix and four characters. */
export function maskSecret(token: string): string {
  const m = /^(gpuhq_[a-z]+_)/.exec(token)
  const prefix = m ? m[1]! : ''
  return `${prefix}${token.slice(prefix.length, prefix.length + 4)}…`
}

/** A 32-byte key for one purpose, derived from SECRET_KEY with HKDF-SHA256. */
export function deriveKey(root: Buffer, purpose: string): Buffer {
  return Buffer.from(hkdfSync('sha256', root, Buffer.alloc(0), `gpuhq:${purpose}`, 32))
}

/** AES-256-GCM; output is nonce(12) | ciphertext | tag(16). `aad` binds the box to its context. */
export function seal(key: Buffer, plaintext: Buffer | string, aad = ''): Buffer {
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  cipher.setAAD(Buffer.from(aad))
  const body = Buffer.concat([cipher.update(typeof plaintext === 'string' ? Buffer.from(plaintext) : plaintext), cipher.final()])
  return Buffer.concat([nonce, body, cipher.getAuthTag()])
}

export function open(key: Buffer, box: Buffer | Uint8Array, aad = ''): Buffer {
  const buf = Buffer.from(box)
  if (buf.length < 28) throw new Error('sealed box too short')
  const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12))
  decipher.setAAD(Buffer.from(aad))
  decipher.setAuthTag(buf.subarray(buf.length - 16))
  return Buffer.concat([decipher.update(buf.subarray(12, buf.length - 16)), decipher.final()])
}

export function hmac(key: Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}
