import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { bytesAnswer } from './wire-body'

/**
 * Serialized answers of snapshot reads (GET /servers, GET /dashboard), kept by a key that names
 * everything the answer depends on: the tenant and the strong ETag, which already covers the
 * snapshot's generation and whatever selects from it (filters, page, token allowlist). A poll
 * that finds nothing new but has no If-None-Match gets the same bytes without building, checking
 * and serializing the page again. At most MAX_BYTES, least recently used dropped first. The answer is
 * kept as its UTF-8 bytes: compression and the wire take them as they are (src/platform/wire-body.ts).
 *
 * An answer is checked against its response schema when it is built (what Elysia does for an
 * object a route returns), so what is kept is what the schema allows.
 */
const MAX_BYTES = 32 * 1024 * 1024
const utf8 = new TextEncoder()

export class AnswerCache {
  readonly #entries = new Map<string, Uint8Array>()
  #bytes = 0

  /** The answer kept under `key`, or the one `build` makes (checked, then kept). */
  json(key: string, build: () => unknown, check: (value: unknown) => void): Uint8Array {
    const kept = this.#entries.get(key)
    if (kept !== undefined) {
      this.#entries.delete(key)
      this.#entries.set(key, kept)
      return kept
    }
    const value = build()
    // The answer is built from what the caller already read (no await: a request's other reads would interleave).
    if (value instanceof Promise) throw new Error('AnswerCache.json builds synchronously from rows already read')
    check(value)
    const bytes = utf8.encode(JSON.stringify(value))
    if (bytes.byteLength <= MAX_BYTES / 4) {
      this.#entries.set(key, bytes)
      // Counted twice: the wire sends them from a Blob of their own (src/platform/wire-body.ts bytesAnswer).
      this.#bytes += 2 * bytes.byteLength
      for (const [k, v] of this.#entries) {
        if (this.#bytes <= MAX_BYTES) break
        this.#entries.delete(k)
        this.#bytes -= 2 * v.byteLength
      }
    }
    return bytes
  }
}

/** A checker for `json()`: throws (a 500, as Elysia's own response check would) when the value does not fit. */
export function responseCheck(schema: TSchema): (value: unknown) => void {
  const compiled = TypeCompiler.Compile(schema)
  return (value) => {
    if (!compiled.Check(value)) {
      const first = compiled.Errors(value).First()
      throw new Error(`answer does not match its response schema at ${first?.path ?? '/'}: ${first?.message ?? 'invalid'}`)
    }
  }
}

/** A JSON answer of cached bytes with its strong tag. */
export function jsonAnswer(bytes: Uint8Array, etag: string): Response {
  return bytesAnswer(bytes, { headers: { 'content-type': 'application/json', etag } })
}
