import type { Scope } from '../../platform/access'

/**
 * The live event catalogue (docs/events.md), as data: each event type, the read scope of its area
 * (a caller sees an event only when `permits` grants that scope for the event's server), what it
 * means, and the fields of its `data` beyond the ones every event carries (`type`, `at`).
 */
type Area = { scope: Scope; fields: string; types: Record<string, string> }

const LIVE_AREAS = {
  presence: {
    scope: 'servers:read',
    fields:
      '`server_id`, `from` and `to` (online, suspect, offline), `message` (why, in words), `server_event_id` (the same transition in GET /servers/{id}/events)',
    types: {
      'presence.online': "the agent's session brought the server online",
      'presence.suspect': 'no heartbeat for 60 s',
      'presence.offline': 'the session closed, or no heartbeat for 300 s',
    },
  },
  rental: {
    scope: 'servers:read',
    fields:
      '`server_id`, `source` (`operator`, `agent`, or the marketplace: `marketplace_a`, `marketplace_b`), `rental_running` (whether any source still says a rental runs on the server)',
    types: {
      'rental.started': 'a source started saying a rental runs on the server',
      'rental.ended': 'a source stopped saying so',
    },
  },
  command: {
    scope: 'commands:read',
    fields:
      "`command_id`, `server_id`, `command_type`, `axis` (`command`, `delivery`, `execution`), `from`, `to`, the command's `delivery_status`, `execution_status` and `queue_reason` after the change, `note`",
    types: {
      'command.created': 'a command was issued (delivery_status queued)',
      'command.queued': 'it waits again (server offline, or sent but not accepted before the session dropped)',
      'command.routing': 'it is being handed to the live session',
      'command.sent': 'it was sent to the agent',
      'command.accepted': 'the agent accepted it',
      'command.delivery_failed': 'accept_by passed before the agent accepted it',
      'command.running': 'the agent started it',
      'command.succeeded': 'it finished successfully',
      'command.failed': 'it finished with an error',
      'command.cancelled': 'it was cancelled',
      'command.expired': 'its deadline passed before it finished',
      'command.cancel_requested': 'a member asked the agent to stop it',
    },
  },
  alert: {
    scope: 'notifications:read',
    fields:
      '`alert_id`, `kind`, `severity`, `server_id` (null for account-wide causes), `marketplace`, `title`, `by` (the member who acknowledged or resolved it; null when gpuhq did), `resolution`',
    types: {
      'alert.opened': 'an incident opened (GET /alerts/{id})',
      'alert.acknowledged': 'a member acknowledged it',
      'alert.resolved': 'it was resolved: its cause cleared, or a member resolved it',
    },
  },
  topup: {
    scope: 'billing:read',
    fields: '`topup_id`, `status`, `amount_usd` (asked for), `credited_usd` (what was credited; null unless succeeded), `payment_method`',
    types: {
      'topup.succeeded': 'the money arrived and was credited',
      'topup.review': 'the top-up needs a human (no credit)',
      'topup.expired': 'the invoice expired unpaid',
      'topup.failed': 'the payment failed',
    },
  },
} satisfies Record<string, Area>

type LiveArea = keyof typeof LIVE_AREAS

/** The scopes of the areas: a token needs at least one to open a stream. */
export const LIVE_SCOPES: readonly Scope[] = [...new Set(Object.values(LIVE_AREAS).map((a) => a.scope as Scope))]

/** The scope a caller needs to see an event of this type (null: not a catalogue type, never sent). */
export function scopeOfType(type: string): Scope | null {
  const area = LIVE_AREAS[type.slice(0, type.indexOf('.')) as LiveArea] as Area | undefined
  return area && type in area.types ? area.scope : null
}

/** Every event type a stream may send, the stream's own included. */
export function liveEventTypes(): string[] {
  return [...Object.values(LIVE_AREAS as Record<string, Area>).flatMap((a) => Object.keys(a.types)), ...Object.keys(STREAM_EVENTS)]
}

/** The stream's own events, which every caller gets. */
const STREAM_EVENTS: Record<string, string> = {
  'stream.open':
    'first event of every stream; its `id` is where the stream starts, so resuming with it loses nothing even if no other event came. `data`: `last_event_id` (that id, a string), `resumed` (true when it continues after a Last-Event-ID), `retention_hours`',
  'stream.reset':
    'sent instead of a resume when events after the Last-Event-ID were pruned (`reason` `pruned`) or the id was never issued (`unknown_id`): reload the state you keep from the REST API; the stream goes on from now',
  'stream.end':
    'the last event before the service closes the stream: `reason` `unauthorized` (the session or token ended, was revoked, or its member lost the role; reconnecting answers 401 or 403), `shutdown` (the process is stopping; reconnect with Last-Event-ID). A client that stops reading is disconnected without one once 1 MiB waits for it',
}

/** The catalogue as a Markdown table, for the OpenAPI description. */
export function catalogueTable(): string {
  const rows = Object.values(LIVE_AREAS as Record<string, Area>).flatMap((a) =>
    Object.entries(a.types).map(([type, about]) => `| \`${type}\` | \`${a.scope}\` | ${about}; data: ${a.fields} |`),
  )
  const own = Object.entries(STREAM_EVENTS).map(([type, about]) => `| \`${type}\` | — | ${about} |`)
  return ['| event | scope | meaning and data |', '|---|---|---|', ...rows, ...own].join('\n')
}
