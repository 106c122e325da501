/**
 * How an answer's bytes leave the process (docs/scale-out.md "A large answer after a wait").
 *
 * Bun 1.4 renders an answer that is ready after the request's first turn of the event loop (every
 * read on PostgreSQL, an answer compressed in the thread pool) corked only while its body is under
 * CORKED_BODY_MAX bytes (`doRenderBlob` in Bun's RequestContext.zig). A larger body of bytes or text
 * is written uncorked: one system call for each piece of the status line and four for every header
 * (name, colon, value, line end): about forty for gpuhq's ten headers. A bare server with ten
 * headers measured 92 µs of CPU for a 40 KB answer against 10 µs for an 8 KB one. A body given as a stream is always rendered corked: the head and the body leave in two
 * calls, chunked (RFC 9112 §7.1) instead of with a Content-Length.
 *
 * So an answer whose bytes the service made (`bytesAnswer`: the snapshot pages, compressed bodies)
 * is sent as a stream of one chunk when it is that large and ready in a later turn than its request
 * (`forTheWire`, the last step of every answer). An answer ready in its request's own turn (a read on
 * SQLite) is rendered corked by Bun, with its Content-Length, and cheaper so than as a stream (64
 * against 83 µs for the 40 KB page). Smaller answers, answers to HEAD and bodies the service did not
 * make keep Bun's own rendering too.
 */
export const CORKED_BODY_MAX = 16384 - 1024

const made = new WeakMap<Response, Uint8Array>()

let turn = 0
let counting = false

/**
 * The event loop's turn, as a number that changes once the turn has ended: take it when a request
 * arrives and hand it to `forTheWire`.
 */
export function eventLoopTurn(): number {
  if (!counting) {
    counting = true
    setImmediate(() => {
      turn++
      counting = false
    })
  }
  return turn
}

/**
 * The bytes as a Blob, made once per bytes object: a Response over a Blob shares its store, where
 * one over the bytes copies them (1.9 µs and 26 KB of garbage for a 50-row page, against 0.3 µs).
 * Kept answers (the snapshot pages, compressed bodies) are the same bytes object every time.
 */
const blobs = new WeakMap<Uint8Array, Blob>()

/** An answer of these bytes, which must not change afterwards; `bodyBytes` gives them back without reading the body. */
export function bytesAnswer(bytes: Uint8Array, init: ResponseInit): Response {
  let blob = blobs.get(bytes)
  if (blob === undefined) blobs.set(bytes, (blob = new Blob([bytes as Uint8Array<ArrayBuffer>])))
  const response = new Response(blob, init)
  made.set(response, bytes)
  return response
}

/** The bytes of an answer made by `bytesAnswer`, or undefined. */
export function bodyBytes(response: Response): Uint8Array | undefined {
  return made.get(response)
}

/**
 * The answer as it is handed to Bun: a large body of known bytes, ready after the turn its request
 * came in (`arrivedIn`, from `eventLoopTurn`), as a stream of one chunk.
 */
export function forTheWire(method: string, response: Response, arrivedIn: number): Response {
  if (turn === arrivedIn) return response
  const bytes = made.get(response)
  if (bytes === undefined || bytes.byteLength < CORKED_BODY_MAX || method === 'HEAD') return response
  response.headers.delete('content-length')
  // Bun's direct stream (its `DirectUnderlyingSource`), typed here so the browser's types accept it too.
  const source = {
    type: 'direct',
    pull(controller: { write(chunk: Uint8Array): unknown; close(): void }) {
      controller.write(bytes)
      controller.close()
    },
  }
  const body = new ReadableStream(source as unknown as ConstructorParameters<typeof ReadableStream<Uint8Array>>[0])
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers })
}
