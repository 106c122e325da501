import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'

/**
 * Serialized answers of snapshot reads (GET /servers, GET /dashboard), kept by a key that names
 * everything the answer depends on: the tenant and the strong ETag, which already covers the
 * snapshot's generation and whatever selects from it (filters, page, token allowlist). A poll
 * that finds nothing new but has no If-None-Match gets the same bytes without building, checking
 * and serializing the page again. At most MAX_BYTES of text, least recently used dropped first.
 *
 * An answer is checked against its response schema when it is built (what Elysia does for an
 * object a route returns), so what is kept is what the schema allows.
 */
const MAX_BYTES = 32 * 1024 * 1024

export class AnswerCache {
  readonly #entries = new Map<string, string>()
  #bytes = 0

  /** The answer kept under `key`, or the one `build` makes (checked, then kept). */
  json(key: string, build: () => unknown, check: (value: unknown) => void): string {
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
    const text = JSON.stringify(value)
    if (text.length <= MAX_BYTES / 4) {
      this.#entries.set(key, text)
      this.#bytes += text.length
      for (const [k, v] of this.#entries) {
        if (this.#bytes <= MAX_BYTES) break
        this.#entries.delete(k)
        this.#bytes -= v.length
      }
    }
    return text
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

/** A JSON answer of cached text with its strong tag. */
export function jsonAnswer(text: string, etag: string): Response {
  return new Response(text, { headers: { 'content-type': 'application/json', etag } })
}
