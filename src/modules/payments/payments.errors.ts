import { defineErrors, invalidField } from '../../platform/domain-error'

export const PaymentErrors = defineErrors('payments', {
  validation: { problem: 'validation_failed', message: 'the request did not pass validation' },
  noProvider: { problem: 'temporarily_unavailable', message: 'no payment provider is enabled on this service (PAYMENT_PROVIDERS)' },
  providerUnreachable: {
    problem: 'temporarily_unavailable',
    message: 'the payment provider could not be reached; the top-up was set aside for review',
  },
  paymentUnreadable: {
    problem: 'temporarily_unavailable',
    message: 'the payment could not be read back from the provider; send the notification again later',
  },
  providerNotFound: { problem: 'not_found', message: 'no such payment provider' },
  badSignature: { problem: 'unauthorized', message: 'the notification signature does not verify' },
  topupNotFound: { problem: 'not_found', message: 'no such top-up' },
  invoiceNotFound: { problem: 'not_found', message: 'no such invoice' },
  invoiceAlreadyPaid: { problem: 'conflict', message: 'this invoice was already paid; it accepts no further outcome' },
  unsettledNotFound: { problem: 'not_found', message: 'no such unsettled payment' },
  alreadySettled: { problem: 'conflict', message: 'the payment was already settled' },
})

export const invalidPaymentField = (path: string, code: string, message: string) => invalidField('payments', path, code, message)
