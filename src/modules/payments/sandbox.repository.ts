import { and, eq } from 'drizzle-orm'
import { sandboxInvoices, sandboxPayments } from '../../../db/schema/payments'
import type { DbOrTx } from '../../../db/client'

export type SandboxInvoiceRow = typeof sandboxInvoices.$inferSelect
export type SandboxPaymentRow = typeof sandboxPayments.$inferSelect

export function insertSandboxInvoice(tx: DbOrTx, row: typeof sandboxInvoices.$inferInsert): void {
  tx.insert(sandboxInvoices).values(row).run()
}

export function findSandboxInvoice(db: DbOrTx, invoiceId: string): SandboxInvoiceRow | undefined {
  return db.select().from(sandboxInvoices).where(eq(sandboxInvoices.invoiceId, invoiceId)).get()
}

export function findSandboxPayment(db: DbOrTx, paymentId: string): SandboxPaymentRow | undefined {
  return db.select().from(sandboxPayments).where(eq(sandboxPayments.paymentId, paymentId)).get()
}

export function markSandboxInvoicePaid(tx: DbOrTx, invoiceId: string): void {
  tx.update(sandboxInvoices)
    .set({ status: 'paid' })
    .where(and(eq(sandboxInvoices.invoiceId, invoiceId), eq(sandboxInvoices.status, 'open')))
    .run()
}

export function insertSandboxPayment(tx: DbOrTx, row: SandboxPaymentRow): void {
  tx.insert(sandboxPayments).values(row).run()
}
