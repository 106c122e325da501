import { defineErrors, invalidField } from '../../platform/domain-error'

export const BillingErrors = defineErrors('billing', {
  dayNotFound: { problem: 'not_found', message: 'no such day' },
  tenantNotFound: { problem: 'not_found', message: 'no such tenant' },
})

export const invalidBillingField = (path: string, code: string, message: string) => invalidField('billing', path, code, message)
