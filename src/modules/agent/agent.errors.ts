import { defineErrors } from '../../platform/domain-error'

/** What enrolment and the agent's HTTPS hello refuse; src/platform/http.ts maps them to problem documents. */
export const AgentErrors = defineErrors('agent', {
  unsupportedVersion: { problem: 'unsupported_agent_version', message: 'the agent is older than the minimum version; update the agent' },
  initTokenRefused: { problem: 'unauthorized', message: 'the init token is used, expired, revoked or unknown' },
  accountFrozen: { problem: 'account_frozen', message: 'the account is frozen; enrolment is refused' },
  serverNotFound: { problem: 'not_found', message: 'no such server' },
})
