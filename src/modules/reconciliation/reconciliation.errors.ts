import { invalidField } from '../../platform/domain-error'

/** What the reconciliation verbs refuse; src/platform/http.ts maps them to problem documents (422 with a pointer). */
export const invalidQuery = (path: string, code: string, message: string) => invalidField('reconciliation', path, code, message)
