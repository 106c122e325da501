import { defineErrors } from '../../platform/domain-error'

/** What the watchdog verbs refuse; src/platform/http.ts maps them to problem documents. */
export const WatchdogErrors = defineErrors('watchdog', {
  notFound: { problem: 'not_found', message: 'no such watchdog rule' },
  tooMany: { problem: 'conflict', message: 'the tenant already has 50 watchdog rules' },
  presetKept: { problem: 'conflict', message: 'a default rule cannot be deleted; turn it off instead' },
  invalid: { problem: 'validation_failed', message: 'the rule is not valid' },
})
