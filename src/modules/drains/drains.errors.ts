import { defineErrors } from '../../platform/domain-error'

/** What the drain verbs refuse; src/platform/http.ts maps them to problem documents. */
export const DrainErrors = defineErrors('drains', {
  notFound: { problem: 'not_found', message: 'no such drain' },
  alreadyDraining: { problem: 'conflict', message: 'the server is already being drained' },
  finished: { problem: 'conflict', message: 'the drain already finished' },
  stepInProgress: { problem: 'conflict', message: 'a step of this drain is in progress; cancel again in a moment' },
  decommissioned: { problem: 'conflict', message: 'the server is decommissioned' },
  invalid: { problem: 'validation_failed', message: 'the drain is not valid' },
})
