import { problems } from './problem'

/**
 * Entity tags (RFC 9110 §8.8.3, §13.1). Mutable resources carry a monotonic integer `version`;
 * their strong tag is that version quoted. Snapshot reads tag their content instead.
 */

export function etagOf(version: number | string): string {
  return `"${version}"`
}

const MAX_HEADER = 256

function tags(header: string): string[] {
  return header
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
}

function checkLength(header: string, name: string): void {
  if (header.length > MAX_HEADER) throw problems.field(`/${name}`, 'too_long', `${name} is longer than ${MAX_HEADER} characters`)
}

/**
 * If-Match with strong comparison: `*` matches any current representation; a weak tag never
 * matches. Absent header: nothing to check. A mismatch answers 412.
 */
export function assertIfMatch(header: string | null | undefined, currentTag: string): void {
  if (header === null || header === undefined) return
  checkLength(header, 'if-match')
  const list = tags(header)
  if (list.includes('*')) return
  if (!list.some((t) => !t.startsWith('W/') && t === currentTag)) throw problems.preconditionFailed()
}

/** If-None-Match with weak comparison: true when the client's copy is current (answer 304). */
export function ifNoneMatchHits(header: string | null | undefined, currentTag: string): boolean {
  if (header === null || header === undefined) return false
  checkLength(header, 'if-none-match')
  const bare = currentTag.replace(/^W\//, '')
  return tags(header).some((t) => t === '*' || t.replace(/^W\//, '') === bare)
}

/** A 304 carries the tag and no body. */
export function notModified(tag: string, requestId: string): Response {
  return new Response(null, { status: 304, headers: { etag: tag, 'x-request-id': requestId } })
}
