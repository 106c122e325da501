import { t } from 'elysia'
import { Type } from '@sinclair/typebox'
import { Literals, Money, Nullable, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { PLAN_CODE_PATTERN } from '../plans'

const STATUSES = ['creating', 'partially_paid', 'succeeded', 'review', 'expired', 'failed'] as const

export const Topup = Type.Object({
  id: Uuid(),
  status: Literals(STATUSES, { description: 'Only succeeded means the money arrived' }),
  amount_usd: Money({ description: 'The invoiced amount' }),
  credited_usd: Money({ description: 'What was credited: the amount the provider confirmed' }),
  payment_method: Type.String(),
  provider: Type.String(),
  provider_status: Nullable(Type.String({ description: "The provider's own word for the payment (waiting, confirming, …)" })),
  purpose: Type.Object({
    kind: Literals(['wallet', 'subscription_change']),
    target_plan: Type.Optional(Nullable(Type.String())),
    change_id: Type.Optional(Nullable(Uuid())),
  }),
  checkout_url: Type.Optional(Type.String({ description: 'Hosted payment page; open it as a navigation. Absent once terminal.' })),
  invoice_id: Nullable(Type.String()),
  review_reason: Nullable(Type.String()),
  created_at: Timestamp(),
  expires_at: Timestamp(),
  succeeded_at: Nullable(Timestamp()),
  updated_at: Timestamp(),
})

export const TopupCreate = Type.Object(
  {
    amount_usd: Money({ description: "At least the method's min_amount_usd" }),
    payment_method: Type.String({ minLength: 1, maxLength: 64, description: 'A code from GET /billing/payment-methods' }),
    purpose: Type.Optional(
      Type.Object(
        {
          kind: Literals(['wallet', 'subscription_change', 'subscription'], { description: '"subscription" is accepted as subscription_change' }),
          target_plan: Type.Optional(Type.String({ pattern: PLAN_CODE_PATTERN })),
          change_id: Type.Optional(Uuid()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
)

export const TopupListQuery = t.Object({ ...PageQuery, status: t.Optional(Literals(STATUSES)) })

export const PaymentMethods = Type.Object({
  items: Type.Array(Type.Object({ code: Type.String(), label: Type.String(), provider: Type.String(), min_amount_usd: Money() })),
})

export const NotificationReceipt = Type.Object({ received: Type.Boolean(), topup_status: Nullable(Type.String()) })
