import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { DisplayText, Literals, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { MarketplaceId } from '../marketplaces'

/** The causes an incident can have (docs/alerts.md "Causes"). */
const KINDS = ['offline', 'temperature', 'agent_error', 'marketplace_error', 'stale_link', 'low_balance', 'readiness', 'renter_report', 'payout_gap'] as const
export type Kind = (typeof KINDS)[number]
/** Lowest first: a repeat of an open cause may raise its severity, never lower it. */
export const SEVERITIES = ['info', 'warning', 'critical'] as const
export type Severity = (typeof SEVERITIES)[number]
const STATES = ['open', 'acknowledged', 'resolved'] as const

const Kind = Literals(KINDS, { description: 'What caused the incident (docs/alerts.md "Causes")' })
const Severity = Literals(SEVERITIES)

/** GET /alerts (Elysia's `t`, which coerces query strings). */
export const AlertsQuery = t.Object({
  ...PageQuery,
  state: t.Optional(Literals([...STATES, 'unresolved'], { description: '`unresolved` is open or acknowledged' })),
  kind: t.Optional(Kind),
  severity: t.Optional(Severity),
  server_id: t.Optional(t.String({ format: 'uuid', description: 'Incidents of this server only' })),
  marketplace: t.Optional(MarketplaceId),
  since: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; incidents opened at or after it' })),
  until: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; incidents opened before it' })),
})

const LinkedNotification = Type.Object({
  id: Uuid(),
  category: Type.String({ maxLength: 32, description: 'The notification category (docs/notifications.md)' }),
  title: Type.String({ maxLength: 256 }),
  created_at: Timestamp(),
})

export const Incident = Type.Object({
  id: Uuid(),
  kind: Kind,
  cause_key: Type.String({
    maxLength: 256,
    description: 'The cause, e.g. `offline:<server_id>`: at most one unresolved incident per cause, a repeat counts in `occurrences`',
  }),
  severity: Severity,
  state: Literals(STATES),
  server_id: Nullable(Uuid(), { description: 'The server concerned; null for account-wide causes (marketplace_error, low_balance)' }),
  marketplace: Nullable(MarketplaceId),
  title: Type.String({ maxLength: 256 }),
  detail: Type.String({ maxLength: 1024 }),
  opened_at: Timestamp(),
  last_seen_at: Timestamp({ description: 'When the cause was last reported or observed (an event, a hot reading, a failed call, a sync)' }),
  occurrences: Type.Integer({ minimum: 1, description: 'How many times the cause was reported or newly observed while this incident was unresolved' }),
  acknowledged_at: Nullable(Timestamp()),
  acknowledged_by: Nullable(Type.String({ description: 'The member (user id) who acknowledged it' })),
  resolved_at: Nullable(Timestamp()),
  resolved_by: Nullable(Type.String({ description: 'The member (user id) who resolved it; null when gpuhq resolved it because the cause cleared' })),
  resolution: Nullable(Type.String({ maxLength: 1024, description: 'Why it was resolved, in words' })),
  notifications: Type.Array(LinkedNotification, {
    maxItems: 100,
    description: 'The notifications its cause produced while it was unresolved, oldest first (no incident sends a notification of its own)',
  }),
})

export const IncidentPage = PageOf(Incident, { maxItems: 200 })

export const ResolveBody = Type.Object(
  { note: Type.Optional(DisplayText({ minLength: 1, maxLength: 512, description: 'Why you resolve it; kept as the resolution' })) },
  { additionalProperties: false },
)
