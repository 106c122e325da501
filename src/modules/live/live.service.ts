import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { LiveErrors } from './live.errors'
import { liveHub } from './live.hub'
import { horizonOf, lastSeqOf } from './live.repository'
import { LiveStream, sseFrame } from './live.stream'

/** How long a client waits before it reconnects (the `retry:` hint), and before retrying a refused stream. */
const RETRY_MS = 3000
const RETRY_REFUSED_S = 30
const EVENT_ID = /^[0-9]{1,15}$/

/**
 * Where a resumed stream starts. `Last-Event-ID` (the header an EventSource sends when it reconnects)
 * wins over `last_event_id` (the query parameter, for clients that cannot set headers), since a
 * reconnecting browser keeps the URL it was opened with.
 */
function requestedId(header: string | null, query: string | undefined): number | null {
  const raw = header?.trim() ? header.trim() : query
  if (raw === undefined || raw === '') return null
  if (!EVENT_ID.test(raw)) throw LiveErrors.badLastEventId(header?.trim() ? '/last-event-id' : '/last_event_id')
  return Number(raw)
}

/**
 * Opens the caller's live stream (docs/events.md): from now, or after the requested id with
 * nothing lost, or, when events after that id were pruned or the id was never issued, with a
 * `stream.reset` and from now.
 */
export async function openLiveStream({
  deps,
  actor,
  lastEventId,
  recheck,
}: {
  deps: Deps
  actor: Actor
  lastEventId: { header: string | null; query: string | undefined }
  recheck: () => Promise<Actor | null>
}): Promise<Response> {
  const requested = requestedId(lastEventId.header, lastEventId.query)
  const hub = liveHub(deps)
  const { streamsPerTenant, retentionHours } = deps.config.liveEvents
  const refuseWhenFull = () => {
    if (hub.count(actor.tenantId) >= streamsPerTenant)
      throw LiveErrors.tooManyStreams(`at most ${streamsPerTenant} live streams per tenant may be open at once (per process)`, {
        retryAfterSeconds: RETRY_REFUSED_S,
      })
  }
  refuseWhenFull()
  // The tenant's own sequence: nothing here moves when another tenant acts (issue 34).
  const last = await lastSeqOf(deps.db, actor.tenantId)
  let preamble = `retry: ${RETRY_MS}\n\n`
  let cursor = last
  if (requested !== null) {
    const reason = requested > last ? 'unknown_id' : requested < (await horizonOf(deps.db, actor.tenantId)) ? 'pruned' : null
    if (reason) preamble += sseFrame('stream.reset', JSON.stringify({ type: 'stream.reset', reason, last_event_id: String(requested) }), cursor)
    else cursor = requested
  }
  const open = { type: 'stream.open', last_event_id: String(cursor), resumed: requested !== null && cursor === requested, retention_hours: retentionHours }
  preamble += sseFrame('stream.open', JSON.stringify(open), cursor)
  // Again, with no await before the stream joins the hub: others of the tenant may have opened meanwhile.
  refuseWhenFull()
  const stream = new LiveStream(deps, actor.tenantId, actor, cursor, preamble, recheck, (s) => hub.remove(s))
  await hub.add(stream)
  return new Response(stream.body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      // Reverse proxies (nginx) would otherwise hold the answer back until a buffer fills.
      'x-accel-buffering': 'no',
    },
  })
}
