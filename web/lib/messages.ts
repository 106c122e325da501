import type { ApiError, FieldError } from './api'

/**
 * Plain words for problem documents. The service's `detail` is shown as it is; where a code means
 * the member has something to do (top up, change plan), the message says what.
 */
const CODES: Record<string, string> = {
  account_frozen: 'Your account is frozen: top up your balance (Billing) to continue.',
  account_in_grace: 'Your account is in grace: top up your balance (Billing) to continue.',
  plan_required: 'Your account has no plan yet: choose one under Billing → Plan.',
  feature_not_entitled: 'Your plan does not include this. The Pro plan does: see Billing → Plan.',
  forbidden: 'Your role or token does not allow this.',
  csrf_rejected: 'The request was refused as coming from another site. Reload the page and try again.',
  server_limit_reached: 'Your plan’s server limit is reached. Change plan (Billing → Plan) to add more servers.',
  temporarily_unavailable: 'This is not available right now. Try again in a little while.',
}

export function problemMessage(e: ApiError): string {
  const p = e.problem
  if (p.code === 'rate_limited') return `Too many attempts. Try again in ${e.retryAfter ?? 60} seconds.`
  const known = CODES[p.code]
  if (known && p.detail && !/^(forbidden|not entitled)$/i.test(p.detail)) return `${known} (${p.detail})`
  return known ?? p.detail ?? p.title
}

const FIELD: Record<string, string> = {
  required: 'This is required.',
  unknown_field: 'This field is not accepted here.',
  invalid_type: 'This value has the wrong type.',
  too_long: 'This is too long.',
  too_short: 'This is too short.',
  too_common: 'This password is too common: choose another.',
  pattern: 'This is not in the expected form.',
  format: 'This is not a valid value.',
  too_small: 'This is too small.',
  too_large: 'This is too large.',
  too_many_items: 'Too many items.',
  too_few_items: 'Too few items.',
  duplicate_items: 'An item is repeated.',
  invalid_value: 'This is not one of the allowed values.',
  empty: 'This must not be empty.',
  rejected_by_marketplace: 'The marketplace rejected this key.',
  insufficient_permissions: 'This key lacks the host permissions the marketplace needs.',
  not_found_on_marketplace: 'The marketplace does not list this machine in your account.',
  not_supported_by_marketplace: 'This marketplace does not support this.',
  not_critical: 'Email is only for critical categories.',
  invalid_code: 'This code is wrong or expired.',
  unknown_time_zone: 'Not a known time zone.',
  unknown_scope: 'Not a known scope.',
  zero_not_allowed: 'Zero is not allowed: leave it empty for “not entered”.',
}

export const fieldMessage = (e: FieldError) => FIELD[e.code] ?? `Not accepted (${e.code.replaceAll('_', ' ')}).`
