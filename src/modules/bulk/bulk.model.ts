import { Type } from '@sinclair/typebox'
import { describedMarketplaceId } from '../marketplaces'
import { DisplayText, Literals, Money, Nullable, PageOf, Timestamp, Uuid } from '../../platform/schemas'

/** Bulk publish / withdraw / reprice (docs/marketplaces.md "Bulk changes"). */

const BULK_ACTIONS = ['publish', 'withdraw', 'reprice'] as const
/** The most servers one operation covers (a tenant keeps at most 512 links). */
const MAX_BULK_SERVERS = 512

const CoinAmount = Type.String({
  pattern: '^(0|[1-9][0-9]{0,11})(\\.[0-9]{1,12})?$',
  maxLength: 25,
  description: 'Decimal string in the coin, e.g. "0.00010337"',
})

export const BulkBody = Type.Object(
  {
    marketplace: describedMarketplaceId('The marketplace whose offers change; a server not linked there is skipped'),
    action: Literals(BULK_ACTIONS, {
      description:
        "publish: list each machine not listed now (at the change's price, else the kept offer's, else the last price the platform showed); withdraw: take each listed machine off the market; reprice: set a new price on each listed machine",
    }),
    server_ids: Type.Optional(
      Type.Array(Uuid(), {
        minItems: 1,
        maxItems: MAX_BULK_SERVERS,
        description: 'The servers, in the order their items run; exactly one of server_ids and group_id',
      }),
    ),
    group_id: Type.Optional(Uuid({ description: 'Every managed server of this group, by name; exactly one of server_ids and group_id' })),
    price_gpu_hour: Type.Optional(Money({ description: 'marketplace_a: USD per GPU-hour on demand; required to reprice there, optional to publish; above 0' })),
    min_bid_hour: Type.Optional(Money({ description: 'marketplace_a: the lowest interruptible bid, USD per GPU-hour; above 0' })),
    coin_prices: Type.Optional(
      Type.Record(
        Type.String({ maxLength: 32 }),
        Type.Object({ on_demand: CoinAmount, spot: Type.Optional(Nullable(CoinAmount)) }, { additionalProperties: false }),
        {
          minProperties: 1,
          maxProperties: 3,
          description:
            'marketplace_b: per-day, per-server prices per coin (bitcoin, CLORE-Blockchain, USD-Blockchain); required to reprice there; each above zero',
        },
      ),
    ),
  },
  { additionalProperties: false },
)

const CoinPrice = Type.Object({ on_demand: Nullable(Type.String()), spot: Nullable(Type.String()) })
const OfferSide = Type.Object(
  {
    listed: Nullable(Type.Boolean()),
    price_gpu_hour: Nullable(Money()),
    min_bid_hour: Nullable(Money()),
    coin_prices: Nullable(Type.Record(Type.String({ maxLength: 32 }), CoinPrice), { description: 'marketplace_b only; null on marketplace_a' }),
  },
  { description: 'An offer as the platform showed it (before) or as the change leaves it (after)' },
)

const PreviewItem = Type.Object({
  server_id: Uuid(),
  server_name: DisplayText({ maxLength: 128 }),
  external_machine_id: Nullable(Type.String({ maxLength: 128 })),
  outcome: Literals(['change', 'skip'] as const, { description: 'change: the run will send it; skip: it will not, `reason` says why' }),
  before: Nullable(OfferSide),
  after: Nullable(OfferSide),
  reason: Nullable(Type.String({ maxLength: 1024 })),
})

export const BulkPreview = Type.Object({
  marketplace: describedMarketplaceId('The marketplace'),
  action: Literals(BULK_ACTIONS),
  counts: Type.Object({ total: Type.Integer({ minimum: 0 }), change: Type.Integer({ minimum: 0 }), skip: Type.Integer({ minimum: 0 }) }),
  items: Type.Array(PreviewItem, { maxItems: MAX_BULK_SERVERS }),
})

const ITEM_STATES = ['pending', 'sending', 'done', 'refused', 'skipped', 'failed', 'cancelled'] as const

const Item = Type.Object({
  server_id: Uuid(),
  server_name: DisplayText({ maxLength: 128 }),
  external_machine_id: Nullable(Type.String({ maxLength: 128 })),
  state: Literals(ITEM_STATES, {
    description:
      'pending: not sent yet; sending: its call is out; done: the platform accepted it; refused: the platform turned it down (reason: its words); skipped: nothing to send (reason); failed: not done for another reason (no usable key, the platform unreachable after 5 tries); cancelled: the operation was cancelled before it was sent',
  }),
  before: Nullable(OfferSide, { description: 'The offer as the platform showed it when the operation was made (null: not linked)' }),
  after: Nullable(OfferSide, {
    description:
      'pending or sending: the offer the change will leave; done: the offer it left; null when it changed nothing (refused, skipped, failed, cancelled)',
  }),
  reason: Nullable(Type.String({ maxLength: 1024 })),
  attempts: Type.Integer({ minimum: 0, description: 'How many times the run sent it (a retry after the platform was unreachable counts)' }),
  finished_at: Nullable(Timestamp()),
})

const Counts = Type.Object(
  {
    total: Type.Integer({ minimum: 0 }),
    pending: Type.Integer({ minimum: 0, description: 'pending and sending' }),
    done: Type.Integer({ minimum: 0 }),
    refused: Type.Integer({ minimum: 0 }),
    skipped: Type.Integer({ minimum: 0 }),
    failed: Type.Integer({ minimum: 0 }),
    cancelled: Type.Integer({ minimum: 0 }),
  },
  { description: 'Items by state' },
)

const operationFields = {
  id: Uuid(),
  marketplace: describedMarketplaceId('The marketplace'),
  action: Literals(BULK_ACTIONS),
  change: Type.Object(
    {
      price_gpu_hour: Type.Optional(Money()),
      min_bid_hour: Type.Optional(Money()),
      coin_prices: Type.Optional(
        Type.Record(Type.String({ maxLength: 32 }), Type.Object({ on_demand: Type.String(), spot: Type.Optional(Nullable(Type.String())) })),
      ),
    },
    { description: 'The prices the request gave' },
  ),
  selection: Type.Object({ server_ids: Type.Optional(Type.Array(Uuid())), group_id: Type.Optional(Uuid()) }, { description: 'The selection as it was asked' }),
  state: Literals(['running', 'finished', 'cancelled'] as const, {
    description: 'running: items wait or are being sent; finished: every item decided; cancelled: cancelled (an item whose call was out still finishes)',
  }),
  counts: Counts,
  created_by: Type.Object({ kind: Type.String(), id: Nullable(Type.String()) }),
  created_at: Timestamp(),
  finished_at: Nullable(Timestamp()),
}

const BulkOperationSummary = Type.Object(operationFields)
export const BulkOperation = Type.Object({ ...operationFields, items: Type.Array(Item, { maxItems: MAX_BULK_SERVERS }) })
export const BulkOperationPage = PageOf(BulkOperationSummary, { maxItems: 200 })
