import { defineErrors } from '../../platform/domain-error'

/** What the bulk verbs refuse; src/platform/http.ts maps them to problem documents. */
export const BulkErrors = defineErrors('bulk', {
  notFound: { problem: 'not_found', message: 'no such bulk operation' },
  finished: { problem: 'conflict', message: 'the bulk operation has finished; there is nothing left to cancel' },
})
