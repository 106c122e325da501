import { describe, reauthenticate } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { LIVE_SCOPES } from './live.catalogue'
import { EventStream, StreamHeaders, StreamQuery } from './live.model'
import { openLiveStream } from './live.service'

export function liveRoutes(deps: Deps) {
  const { heartbeatSeconds, retentionHours, maxPerTenant, streamsPerTenant } = deps.config.liveEvents
  return apiRoutes('live', deps).get(
    '/events/stream',
    ({ verb, request, query, headers }) =>
      openLiveStream({
        ...verb,
        lastEventId: { header: headers['last-event-id'] ?? null, query: query.last_event_id },
        recheck: () => reauthenticate(request),
      }),
    {
      query: StreamQuery,
      headers: StreamHeaders,
      response: responses({ 200: EventStream }, [401, 403, 422, 429]),
      detail: describe(
        { role: 'viewer', anyScope: LIVE_SCOPES, reach: 'server' },
        {
          tags: ['events'],
          summary: 'Follow what happens in the tenant, live (Server-Sent Events)',
          description: [
            'Presence transitions, command state changes, rentals started and ended, alert incidents and top-up outcomes of your tenant as they commit (docs/events.md). Follow it with `curl -N` or an EventSource.',
            "Each event needs the read scope of its area: a token sees only the areas its scopes (cut to its creator's role) allow, and an event about a server outside its `server_allowlist` is never sent; a token with an allowlist gets no top-ups (billing spans every server). The operation itself needs at least one of those scopes.",
            `Without \`Last-Event-ID\` the stream starts now. With it (or \`last_event_id\`) it resumes right after that id, nothing lost, nothing twice; when events after it were pruned (kept ${retentionHours} h, at most ${maxPerTenant} per tenant) or the id was never issued, it sends \`stream.reset\` (reload state) and goes on from now. A bad id is 422.`,
            `A \`: keep-alive\` comment comes every ${heartbeatSeconds} s; the caller is checked again then, and a revoked or expired token or session ends the stream (\`stream.end\`). At most ${streamsPerTenant} streams per tenant are open at once per process (then 429 with Retry-After). Never compressed.`,
          ].join('\n\n'),
        },
      ),
    },
  )
}
