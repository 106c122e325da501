import { brotliCompress, constants, gzip } from 'node:zlib'
import { promisify } from 'node:util'
import { bodyBytes, bytesAnswer } from './wire-body'

/**
 * Content coding of answers (RFC 9110 §8.4, §12.5.3; docs/conventions.md "Compression").
 *
 * A JSON, CSV or plain-text answer (the Prometheus exposition) of at least COMPRESS_MIN_BYTES is sent zstd-, brotli- or gzip-encoded when
 * the request's Accept-Encoding allows one: the highest q-value wins, and on a tie zstd, then br,
 * then gzip (fastest for the size it saves). Smaller answers and every other type are sent as they
 * are. Compression runs in the thread pool, off the event loop. Every compressible answer says
 * `Vary: Accept-Encoding`.
 *
 * The ETag is left as it is: it names the resource version (the spec's `version`, or a snapshot's
 * content), whatever the coding, and If-Match / If-None-Match compare that. gpuhq serves no byte
 * ranges, so a strong tag shared by two codings cannot splice bytes of one into the other.
 */
export const COMPRESS_MIN_BYTES = 1024

const CODINGS = ['zstd', 'br', 'gzip'] as const
type Coding = (typeof CODINGS)[number]

const COMPRESSIBLE = /^(application\/(json|problem\+json)|text\/(csv|plain))\s*(;|$)/i
/** Longer Accept-Encoding values are read no further (the real ones are a few dozen characters). */
const MAX_HEADER = 1024

const gzipAsync = promisify(gzip)
const brotliAsync = promisify(brotliCompress)

/** The coding to answer with, or null for identity. */
export function negotiateEncoding(header: string | null): Coding | null {
  if (!header) return null
  const weights = new Map<string, number>()
  for (const part of header.slice(0, MAX_HEADER).split(',')) {
    const [name = '', ...params] = part.split(';')
    let q = 1
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9](?:\.[0-9]{0,3})?)\s*$/i.exec(p)
      if (m) q = Math.min(1, Number(m[1]))
      else if (/^\s*q\s*=/i.test(p)) q = 0 // a malformed weight is not consent
    }
    weights.set(name.trim().toLowerCase(), q)
  }
  let best: Coding | null = null
  let bestQ = 0
  for (const coding of CODINGS) {
    // `*` stands for every coding the header does not name.
    const q = weights.get(coding) ?? weights.get('*') ?? 0
    if (q > bestQ) {
      best = coding
      bestQ = q
    }
  }
  return best
}

function compress(body: Uint8Array, coding: Coding): Promise<Uint8Array> {
  switch (coding) {
    case 'zstd':
      return Bun.zstdCompress(body, { level: 3 })
    case 'br':
      return brotliAsync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 4, [constants.BROTLI_PARAM_SIZE_HINT]: body.byteLength } })
    case 'gzip':
      return gzipAsync(body, { level: 6 })
  }
}

/**
 * Compressed answers, by content: a snapshot page or a metrics answer
 * polled by many clients is compressed once. The key is the coding and a hash of the bytes, and a
 * hit also compares the bytes themselves, so one answer's compressed form can never be served for
 * another's. At most KEEP_MAX_BYTES (uncompressed and compressed together, keptSize), least recently
 * used dropped first.
 */
const KEEP_MAX_BYTES = 64 * 1024 * 1024
const kept = new Map<string, { raw: Uint8Array; packed: Uint8Array }>()
let keptBytes = 0

/** What an entry holds: the raw bytes, and the packed ones twice (the wire sends them from a Blob: wire-body.ts bytesAnswer). */
const keptSize = (raw: Uint8Array, packed: Uint8Array) => raw.byteLength + 2 * packed.byteLength

async function compressKept(raw: Uint8Array, coding: Coding): Promise<Uint8Array> {
  const key = `${coding}:${raw.byteLength}:${Bun.hash(raw)}`
  const hit = kept.get(key)
  if (hit && Buffer.from(hit.raw.buffer, hit.raw.byteOffset, hit.raw.byteLength).equals(raw)) {
    kept.delete(key)
    kept.set(key, hit)
    return hit.packed
  }
  const packed = await compress(raw, coding)
  if (!kept.has(key) && keptSize(raw, packed) <= KEEP_MAX_BYTES / 8) {
    kept.set(key, { raw, packed })
    keptBytes += keptSize(raw, packed)
    for (const [k, v] of kept) {
      if (keptBytes <= KEEP_MAX_BYTES) break
      kept.delete(k)
      keptBytes -= keptSize(v.raw, v.packed)
    }
  }
  return packed
}

/** The answer as the request's Accept-Encoding would have it. */
export async function encodeResponse(request: Request, response: Response): Promise<Response> {
  const type = response.headers.get('content-type')
  if (!type || !COMPRESSIBLE.test(type) || response.body === null || response.headers.has('content-encoding')) return response
  const vary = response.headers.get('vary')
  if (!vary || !/(^|,)\s*accept-encoding\s*(,|$)/i.test(vary)) response.headers.set('vary', vary ? `${vary}, Accept-Encoding` : 'Accept-Encoding')
  const coding = negotiateEncoding(request.headers.get('accept-encoding'))
  if (coding === null) return response
  const raw = bodyBytes(response) ?? new Uint8Array(await response.arrayBuffer())
  const headers = new Headers(response.headers)
  if (raw.byteLength < COMPRESS_MIN_BYTES) return bytesAnswer(raw, { status: response.status, statusText: response.statusText, headers })
  const packed = await compressKept(raw, coding)
  headers.set('content-encoding', coding)
  headers.delete('content-length')
  return bytesAnswer(packed, { status: response.status, statusText: response.statusText, headers })
}
