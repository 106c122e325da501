import { createHash } from 'node:crypto'
import type { Clock } from '../../platform/clock'
import { ifNoneMatchHits } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { AnswerCache } from './cache'

/**
 * How a report reaches the caller (docs/reports.md "Formats and caching"): JSON or CSV, chosen by
 * `format` or else by Accept; a strong ETag over the exact bytes, so If-None-Match answers 304;
 * `Cache-Control: private, max-age=60` with `Age` on an answer served from the cache.
 */

export type Format = 'json' | 'csv'
const TTL_SECONDS = 60
const CACHE_CONTROL = `private, max-age=${TTL_SECONDS}`

type Answer = { format: 'json'; body: object; etag: string } | { format: 'csv'; text: string; etag: string }

/** What a report verb gives: both renderings, made only when asked for. */
export type Rendered<T extends object = object> = { json: () => T; csv: () => string }

export function reportCache(clock: Clock) {
  return new AnswerCache<Answer>(clock, { ttlUs: TTL_SECONDS * 1_000_000, maxEntries: 256, maxBytes: 32 * 1024 * 1024 })
}
type ReportCache = ReturnType<typeof reportCache>

/** The q-value of a media range in an Accept header for `type` (0 when nothing matches). */
function quality(accept: string, type: string): number {
  let best = -1
  let q = 0
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase())
    const specificity = range === type ? 2 : range === `${type.split('/')[0]}/*` ? 1 : range === '*/*' ? 0 : -1
    if (specificity < 0 || specificity < best) continue
    const qParam = params.find((p) => p.startsWith('q='))
    const value = qParam ? Number(qParam.slice(2)) : 1
    best = specificity
    q = Number.isFinite(value) ? value : 0
  }
  return q
}

/** `format` wins; else text/csv when Accept prefers it to application/json (a tie, or neither named: JSON). */
export function formatOf(param: Format | undefined, accept: string | null): Format {
  if (param) return param
  if (!accept) return 'json'
  return quality(accept, 'text/csv') > quality(accept, 'application/json') ? 'csv' : 'json'
}

const strongTag = (text: string) => `"${createHash('sha256').update(text).digest('base64url').slice(0, 32)}"`

/**
 * Serves a report from the cache or builds it (a build may yield the event loop while it reads,
 * gpu-days.service.ts); answers 304 when If-None-Match holds the tag. JSON is returned as the
 * object (the route's schema checks it), CSV as a whole response.
 */
export async function serveReport<T extends object>(o: {
  request: Request
  set: { headers: Record<string, string | number> }
  cache: ReportCache
  clock: Clock
  key: string
  format: Format
  filename: string
  /** Called before a report is computed (not for an answer from the cache): the expensive-read limit, which may throw 429. */
  admit: () => Promise<void> | void
  build: () => Rendered<T> | Promise<Rendered<T>>
}): Promise<T | Response> {
  let cached = o.cache.get(`${o.key}|${o.format}`)
  if (!cached) {
    await o.admit()
    const rendered = await o.build()
    // Both renderings are kept, so the console's CSV link after the page's JSON (or the other way
    // round) is an answer from the cache, not a second computation counted as an expensive read.
    const json = rendered.json()
    const jsonText = JSON.stringify(json)
    const csv = rendered.csv()
    const answers = {
      json: o.cache.set(`${o.key}|json`, { format: 'json', body: json, etag: strongTag(jsonText) }, jsonText.length),
      csv: o.cache.set(`${o.key}|csv`, { format: 'csv', text: csv, etag: strongTag(csv) }, csv.length),
    }
    cached = answers[o.format]
  }
  const answer = cached.value
  const headers: Record<string, string> = {
    etag: answer.etag,
    'cache-control': CACHE_CONTROL,
    vary: 'Accept',
    age: String(Math.max(0, Math.floor((o.clock.nowUs() - cached.madeAt) / 1_000_000))),
  }
  if (ifNoneMatchHits(o.request.headers.get('if-none-match'), answer.etag))
    return new Response(null, { status: 304, headers: { ...headers, 'x-request-id': requestState(o.request).id } })
  if (answer.format === 'csv')
    return new Response(answer.text, {
      headers: {
        ...headers,
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="${o.filename}.csv"`,
        'x-request-id': requestState(o.request).id,
      },
    })
  Object.assign(o.set.headers, headers)
  // The cache holds one report per key, built by this same verb: its body is this T.
  return answer.body as T
}
