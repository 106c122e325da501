import { defineErrors, invalidField } from '../../platform/domain-error'

/** What the alerts verbs refuse; src/platform/http.ts maps them to problem documents. */
export const AlertErrors = {
  ...defineErrors('alerts', {
    notFound: { problem: 'not_found', message: 'no such incident' },
    alreadyResolved: { problem: 'conflict', message: 'the incident is resolved already; there is nothing left to acknowledge' },
  }),
  badSince: () => invalidField('alerts', '/since', 'format', 'since must be an RFC 3339 timestamp'),
  badUntil: () => invalidField('alerts', '/until', 'format', 'until must be an RFC 3339 timestamp'),
}
