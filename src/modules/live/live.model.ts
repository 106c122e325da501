import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { catalogueTable } from './live.catalogue'

/** GET /events/stream (Elysia's `t`, which coerces query strings). */
export const StreamQuery = t.Object({
  last_event_id: t.Optional(
    t.String({
      maxLength: 15,
      pattern: '^[0-9]{1,15}$',
      description:
        'Resume after this event id, for clients that cannot send the Last-Event-ID header; the header wins when both are sent (a reconnecting EventSource sends the header and keeps its URL)',
    }),
  ),
})

/** Declared for the OpenAPI document; the service checks the value (a decimal id, else 422 on `/last-event-id`). */
export const StreamHeaders = t.Object({
  'last-event-id': t.Optional(
    t.String({
      maxLength: 64,
      description: 'Resume right after this event id (what an EventSource sends when it reconnects); a decimal integer',
    }),
  ),
})

export const EventStream = Type.String({
  'x-media-type': 'text/event-stream',
  description: `A WHATWG Server-Sent Events stream: \`retry:\`, then events of \`id:\` (a decimal integer, increasing), \`event:\` (the type) and one \`data:\` line of JSON with \`type\`, \`at\` (RFC 3339) and the fields below; \`: keep-alive\` comment lines between them.\n\n${catalogueTable()}`,
})
