import { defineErrors } from '../../platform/domain-error'

/** What the strategy verbs refuse; src/platform/http.ts maps them to problem documents. */
export const StrategyErrors = defineErrors('strategy', {
  policyNotFound: { problem: 'not_found', message: 'no such pricing policy' },
  suggestionNotFound: { problem: 'not_found', message: 'no such suggestion' },
  tooManyPolicies: { problem: 'conflict', message: 'a tenant keeps at most 50 pricing policies' },
  decided: { problem: 'conflict', message: 'the suggestion was already decided' },
  notListed: { problem: 'conflict', message: 'the offer is no longer listed' },
  busy: { problem: 'conflict', message: 'the suggestion is being accepted right now' },
  loweringLimited: { problem: 'conflict', message: 'marketplace_b lets a price be lowered once per 600 seconds' },
})
