import { invalidField } from '../../platform/domain-error'

/** The catalogue's errors are all field errors of the operator's input (scripts/admin plan). */
export const invalidPlanField = (path: string, code: string, message: string) => invalidField('plans', path, code, message)
