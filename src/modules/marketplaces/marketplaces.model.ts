import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Literals, Money, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { MARKETPLACES } from './marketplaces.adapter'

export const MarketplaceParam = t.Object({ marketplace: t.UnionEnum([...MARKETPLACES]) })

export const ConnectBody = Type.Object(
  {
    api_key: Type.String({
      minLength: 1,
      maxLength: 512,
      description: 'The API key of your account at the marketplace. Verified before it is stored; never shown again.',
    }),
  },
  { additionalProperties: false },
)

export const Connection = Type.Object({
  marketplace: Literals(MARKETPLACES),
  status: Literals(['connected', 'invalid_key'] as const),
  owner: Type.String({ description: 'How the marketplace identifies the account owner', maxLength: 256 }),
  key_hash: Type.String({ description: 'A keyed hash of the stored key: equal for the same key, different for a new one' }),
  connected_at: Timestamp(),
  updated_at: Timestamp(),
  last_success_at: Nullable(Timestamp()),
  last_failure_at: Nullable(Timestamp()),
  last_failure: Nullable(Type.String({ maxLength: 512, description: 'Why the last sync failed; kept until the next success' })),
  holding_usd: Nullable(Money({ description: "marketplace_b's holding-programme amount; null when unread (always on marketplace_a)" })),
})

export const ConnectionList = Type.Object({ items: Type.Array(Connection, { maxItems: 2 }) })

const Operation = Type.Object({
  id: Uuid(),
  marketplace: Literals(MARKETPLACES),
  server_id: Nullable(Uuid()),
  operation: Type.String({ maxLength: 64 }),
  method: Type.String({ maxLength: 8 }),
  path: Type.String({ maxLength: 512, description: 'The platform path called, without its query string' }),
  status: Nullable(Type.Integer({ description: 'HTTP status the platform answered; null when no answer came' })),
  outcome: Literals(['ok', 'rejected_key', 'missing_permission', 'unavailable', 'retried'] as const),
  latency_ms: Type.Integer({ minimum: 0 }),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()) }),
  at: Timestamp(),
})

export const OperationPage = Type.Object({ items: Type.Array(Operation), next_cursor: Nullable(Type.String()) })
