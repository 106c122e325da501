import { defineErrors } from '../../platform/domain-error'

/** What the fleet's verbs refuse, in its own terms; src/platform/http.ts maps them to problem documents. */
export const FleetErrors = defineErrors('fleet', {
  serverNotFound: { problem: 'not_found', message: 'no such server' },
  serverDecommissioned: { problem: 'conflict', message: 'the server is decommissioned' },
})
