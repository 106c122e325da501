import { invalidField } from '../../platform/domain-error'

/** A query the schema lets through but the range rules refuse (422 with a pointer to the parameter). */
export const invalidReportQuery = (path: string, code: string, message: string) => invalidField('reports', path, code, message)
