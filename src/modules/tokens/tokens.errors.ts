import { defineErrors, invalidField } from '../../platform/domain-error'
import type { FieldError } from '../../platform/problem'

const E = defineErrors('tokens', {
  invalidPat: {
    problem: 'validation_failed',
    message: 'scopes must be known, and expires_at must lie within a year (non-expiring tokens are refused in production)',
  },
  scopeBeyondRole: { problem: 'forbidden', message: 'the role cannot grant these scopes' },
  tokenNotFound: { problem: 'not_found', message: 'no such token' },
  serverNotFound: { problem: 'not_found', message: 'no such server' },
  initTokenNeedsServer: {
    problem: 'forbidden',
    message: 'a token limited to servers (server_allowlist) can only mint init tokens bound to one of them (server_id)',
  },
  planRequired: { problem: 'plan_required', message: 'the tenant has no plan assignment' },
  serverLimitReached: { problem: 'server_limit_reached', message: "the plan's server limit is reached" },
})

/** What minting, revoking and enrolment refuse. */
export const TokenErrors = {
  invalidPat: (fields: FieldError[]) => E.invalidPat(undefined, { fields }),
  scopeBeyondRole: (role: string, scopes: string[]) => E.scopeBeyondRole(`a ${role} cannot grant ${scopes.join(', ')}`),
  unknownAllowlistServer: (index: number, id: string) =>
    invalidField('tokens', `/server_allowlist/${index}`, 'unknown_server', `no server ${id} in this tenant`),
  tokenNotFound: () => E.tokenNotFound(),
  serverNotFound: () => E.serverNotFound(),
  initTokenNeedsServer: () => E.initTokenNeedsServer(),
  planRequired: () => E.planRequired(),
  serverLimitReached: (plan: { label: string; serversMax: number }, used: number) =>
    E.serverLimitReached(
      `the ${plan.label} plan manages at most ${plan.serversMax} server${plan.serversMax === 1 ? '' : 's'}; ${used} ${used === 1 ? 'is' : 'are'} enrolled or promised to unused install tokens`,
    ),
}
