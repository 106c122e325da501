import { Type } from '@sinclair/typebox'
import { Literals, Nullable, Timestamp, Uuid } from '../../platform/schemas'
import { MarketplaceId } from '../../platform/marketplace-id'

const STATUSES = ['ready', 'not_ready', 'unknown'] as const
const Status = Literals(STATUSES, {
  description: '`not_ready` when any item fails; `ready` when every required item passes; `unknown` otherwise (docs/readiness.md)',
})

const Item = Type.Object({
  id: Type.String({
    maxLength: 64,
    description: 'The check, e.g. `cuda.version` (the Vast CLI self-test’s ids where it has one; docs/readiness.md lists them all)',
  }),
  title: Type.String({ maxLength: 128 }),
  required: Type.Boolean({
    description: 'Part of the bar: `ready` needs it to pass. An item that is not required still makes the machine not ready when it fails.',
  }),
  status: Literals(['pass', 'fail', 'unknown'] as const),
  value: Nullable(Type.String({ maxLength: 512, description: 'The measured value as text (decimal, never exponent notation); null when unknown' })),
  unit: Nullable(Type.String({ maxLength: 32 })),
  threshold: Type.String({ maxLength: 256, description: 'The bar with its figure, in words (e.g. `≥ 250 (500 × 96 GiB VRAM ÷ 192, kept within 100..500)`)' }),
  value_source: Nullable(
    Literals(['marketplace', 'agent'] as const, {
      description: '`marketplace`: the platform’s own view of the machine (the link’s projection); `agent`: the agent’s facts and readings',
    }),
  ),
  threshold_source: Type.String({ maxLength: 256, description: 'Where the bar comes from: a published source, or gpuhq’s own choice (docs/readiness.md)' }),
  action: Nullable(Type.String({ maxLength: 512, description: 'What to do; null when it passes' })),
  detail: Type.String({ maxLength: 512 }),
})

const Entry = Type.Object({
  marketplace: MarketplaceId,
  linked: Type.Boolean({ description: 'Whether the server is linked on this marketplace; when not, only the agent’s facts are checked (a what-if)' }),
  external_machine_id: Nullable(Type.String({ maxLength: 128 })),
  link_state: Nullable(Literals(['linked', 'stale', 'conflict'] as const, { description: 'A stale link’s last view is not used' })),
  platform_seen_at: Nullable(Timestamp({ description: 'When the sync last saw the machine in the platform’s listing' })),
  status: Status,
  items: Type.Array(Item, { maxItems: 32 }),
})

export const ServerReadiness = Type.Object({
  server_id: Uuid(),
  name: Type.String({ maxLength: 256 }),
  status: Status,
  marketplaces: Type.Array(Entry, { maxItems: 8 }),
  evaluated_at: Timestamp({ description: 'When this answer was computed (it is computed on every read)' }),
})

const Summary = Type.Object({
  server_id: Uuid(),
  name: Type.String({ maxLength: 256 }),
  status: Status,
  marketplaces: Type.Array(
    Type.Object({
      marketplace: MarketplaceId,
      linked: Type.Boolean(),
      status: Status,
      failing: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 32, description: 'Ids of the failing items' }),
      unknown: Type.Array(Type.String({ maxLength: 64 }), { maxItems: 32, description: 'Ids of the required items whose value is unknown' }),
    }),
    { maxItems: 8 },
  ),
})

export const FleetReadiness = Type.Object({
  counts: Type.Object({ ready: Type.Integer({ minimum: 0 }), not_ready: Type.Integer({ minimum: 0 }), unknown: Type.Integer({ minimum: 0 }) }),
  servers: Type.Array(Summary, { maxItems: 100_000, description: 'Every managed server you may see, by name' }),
  evaluated_at: Timestamp(),
})
