import { defineErrors } from '../../platform/domain-error'

export const SubscriptionErrors = defineErrors('subscription', {
  planRequired: { problem: 'plan_required', message: 'the tenant has no plan assignment' },
  planNotFound: { problem: 'not_found', message: 'no such plan' },
  tenantNotFound: { problem: 'not_found', message: 'no such tenant' },
  contractPriced: { problem: 'feature_not_entitled', message: 'the target plan is contract-priced; ask us for an offer' },
  topupNotFound: { problem: 'not_found', message: 'no such top-up' },
  alreadyOnPlan: { problem: 'conflict', message: 'the tenant is already on this plan' },
  serverLimitReached: { problem: 'server_limit_reached', message: "the fleet exceeds the target plan's server limit" },
  changeAlreadyPending: {
    problem: 'change_already_pending',
    message: 'a plan change is already pending; send If-Match with the subscription version to replace it',
  },
  changeEffective: { problem: 'change_effective', message: 'the change is already in effect and will be applied by the next run' },
  changeNotFound: { problem: 'not_found', message: 'no such plan change' },
  changeAlreadyApplied: { problem: 'change_already_applied', message: 'the change was already applied' },
  changeClosed: { problem: 'conflict', message: 'the change was already closed' },
})
