import { invalidField } from '../../platform/domain-error'

/** The audit list's own refusals: a time bound the schema cannot check (RFC 3339). */
export const AuditErrors = {
  badFrom: () => invalidField('audit', '/from', 'format', 'from must be an RFC 3339 timestamp'),
  badTo: () => invalidField('audit', '/to', 'format', 'to must be an RFC 3339 timestamp'),
}
