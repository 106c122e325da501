import { DomainError, defineErrors } from '../../platform/domain-error'
import type { MarketplaceError } from './adapters/marketplaces.adapter'

const E = defineErrors('marketplaces', {
  notConnected: { problem: 'not_found', message: 'no account is connected at this marketplace' },
  unavailable: { problem: 'temporarily_unavailable', message: 'the marketplace could not be reached; the key was not stored' },
  notConnectedHere: {
    problem: 'conflict',
    message: 'no account is connected at this marketplace; connect one with PUT /marketplaces/{marketplace} first',
  },
  storedKeyRejected: {
    problem: 'conflict',
    message: 'the marketplace rejected the stored key; send a valid key with PUT /marketplaces/{marketplace}',
  },
  storedKeyLacksPermission: {
    problem: 'conflict',
    message: 'the stored key cannot read the machine list (a missing permission group or a two-factor session); send a key with the host permissions',
  },
  platformUnavailable: { problem: 'temporarily_unavailable', message: 'the marketplace could not be reached; try again shortly' },
  alreadyLinked: { problem: 'conflict', message: 'this server is already linked at this marketplace: delete that link first' },
  tooManyLinks: { problem: 'conflict', message: 'a tenant keeps at most 512 links' },
  linkNotFound: { problem: 'not_found', message: 'this server has no link at this marketplace' },
  listingHeld: { problem: 'conflict', message: 'the server is kept off the market for now' },
  storedKeyCannotWrite: {
    problem: 'conflict',
    message:
      'the stored key cannot manage machines (a missing permission group, e.g. machine_write, or a two-factor session); send a key with the host permissions',
  },
})

/**
 * What the marketplace operations refuse (docs/marketplaces.md "When a platform misbehaves"). The
 * three outcomes of a key check stay apart: rejected by the platform (422 on /api_key,
 * rejected_by_marketplace), lacking a permission group or 2FA (422 on /api_key with its own code),
 * and unreachable, 5xx or rate-limited past the retries (503 with Retry-After). None stores the key.
 */
export const MarketplaceErrors = {
  notConnected: () => E.notConnected(),
  alreadyLinked: () => E.alreadyLinked(),
  tooManyLinks: () => E.tooManyLinks(),
  linkNotFound: () => E.linkNotFound(),
  /** 409: a drain keeps the server's offers off the market until its work is done (the detail says which and how to end it). */
  listingHeld: (why: string) => E.listingHeld(why),
  /** The machine is not in the account's live listing at the marketplace. */
  machineNotFound: () =>
    new DomainError('marketplaces.machine_not_found', 'validation_failed', 'the marketplace lists no such machine for the connected account', {
      fields: [{ path: '/external_machine_id', code: 'not_found_on_marketplace' }],
    }),
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
  /**
   * An operation that needs the stored connection (candidates, links): none connected → 409; a connection
   * whose key the platform now rejects, or that cannot read machines → 409 (a rejection also marks
   * the connection invalid_key, see recordOutcome); unreachable → 503 with Retry-After.
   */
  notConnectedHere: () => E.notConnectedHere(),
  fromStoredKey: (e: MarketplaceError): DomainError => {
    if (e.failure === 'rejected_key') return E.storedKeyRejected(undefined, { internal: e.message })
    if (e.failure === 'missing_permission') return E.storedKeyLacksPermission(undefined, { internal: e.message })
    return E.platformUnavailable(undefined, { retryAfterSeconds: e.retryAfterSeconds ?? 30, internal: e.message })
  },
  /**
   * A write with the stored key (offers, maintenance): as fromStoredKey, plus the platform turning
   * down the request itself → 422 with errors[0] {path: "", code: "refused_by_marketplace"} and the
   * platform's reason in the detail (scrubbed of the key by the adapter).
   */
  fromWrite: (e: MarketplaceError): DomainError => {
    if (e.failure === 'refused')
      return new DomainError('marketplaces.refused', 'validation_failed', e.message, { fields: [{ path: '', code: 'refused_by_marketplace' }] })
    if (e.failure === 'missing_permission') return E.storedKeyCannotWrite(undefined, { internal: e.message })
    return MarketplaceErrors.fromStoredKey(e)
  },
  /** A field the marketplace has no use for (e.g. coin_prices on marketplace_a). */
  notSupported: (path: string, detail: string) =>
    new DomainError('marketplaces.not_supported', 'validation_failed', detail, { fields: [{ path, code: 'not_supported_by_marketplace' }] }),
}
