import { DomainError, defineErrors } from '../../platform/domain-error'
import type { MarketplaceError } from './marketplaces.adapter'

const E = defineErrors('marketplaces', {
  notConnected: { problem: 'not_found', message: 'no account is connected at this marketplace' },
  unavailable: { problem: 'temporarily_unavailable', message: 'the marketplace could not be reached; the key was not stored' },
})

/**
 * What the marketplace operations refuse (docs/marketplaces.md "When a platform misbehaves"). The
 * three outcomes of a key check stay apart: rejected by the platform (422 on /api_key,
 * rejected_by_marketplace), lacking a permission group or 2FA (422 on /api_key with its own code),
 * and unreachable, 5xx or rate-limited past the retries (503 with Retry-After). None stores the key.
 */
export const MarketplaceErrors = {
  notConnected: () => E.notConnected(),
  fromAdapter: (e: MarketplaceError): DomainError => {
    if (e.failure === 'rejected_key')
      return new DomainError('marketplaces.rejected_key', 'validation_failed', 'the marketplace rejected the key; it was not stored', {
        fields: [{ path: '/api_key', code: 'rejected_by_marketplace' }],
      })
    if (e.failure === 'missing_permission')
      return new DomainError(
        'marketplaces.missing_permission',
        'validation_failed',
        `the marketplace accepted the key but it cannot do what gpuhq needs (${e.message}); give it the host permissions, or use a key that needs no two-factor session. It was not stored`,
        { fields: [{ path: '/api_key', code: 'insufficient_permissions' }] },
      )
    return E.unavailable(undefined, { retryAfterSeconds: e.retryAfterSeconds ?? 30, internal: e.message })
  },
}
