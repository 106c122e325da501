import { and, eq } from 'drizzle-orm'
import { sandboxInvoices, sandboxPayments } from '../../../db/schema/payments'
import type { DbOrTx } from '../../../db/client'

export type SandboxInvoiceRow = typeof sandboxInvoices.$inferSelect
export type SandboxPaymentRow = typeof sandboxPayments.$inferSelect

export async function insertSandboxInvoice(tx: DbOrTx, row: typeof sandboxInvoices.$inferInsert): Promise<void> {
  await tx.insert(sandboxInvoices).values(row).run()
}

export async function findSandboxInvoice(db: DbOrTx, invoiceId: string): Promise<SandboxInvoiceRow | undefined> {
  return await db.select().from(sandboxInvoices).where(eq(sandboxInvoices.invoiceId, invoiceId)).get()
}

export async function findSandboxPayment(db: DbOrTx, paymentId: string): Promise<SandboxPaymentRow | undefined> {
  return await db.select().from(sandboxPayments).where(eq(sandboxPayments.paymentId, paymentId)).get()
}

export async function markSandboxInvoicePaid(tx: DbOrTx, invoiceId: string): Promise<void> {
  await tx
    .update(sandboxInvoices)
    .set({ status: 'paid' })
    .where(and(eq(sandboxInvoices.invoiceId, invoiceId), eq(sandboxInvoices.status, 'open')))
    .run()
}

export async function insertSandboxPayment(tx: DbOrTx, row: SandboxPaymentRow): Promise<void> {
  await tx.insert(sandboxPayments).values(row).run()
}
