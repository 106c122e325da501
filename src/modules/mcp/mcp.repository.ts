import { and, eq, isNull } from 'drizzle-orm'
import { mcpAccess, mcpClients, mcpCodes, mcpConnections, mcpTokens } from '../../../db/schema/mcp'
import { changesOf, type DbOrTx } from '../../../db/client'

export type AccessRow = typeof mcpAccess.$inferSelect
export type ClientRow = typeof mcpClients.$inferSelect
export type ConnectionRow = typeof mcpConnections.$inferSelect
export type CodeRow = typeof mcpCodes.$inferSelect
export type TokenRow = typeof mcpTokens.$inferSelect

export async function findAccess(db: DbOrTx, tenantId: string): Promise<AccessRow | undefined> {
  return await db.select().from(mcpAccess).where(eq(mcpAccess.tenantId, tenantId)).get()
}

export async function findAccessByHash(db: DbOrTx, tokenHash: string): Promise<AccessRow | undefined> {
  return await db.select().from(mcpAccess).where(eq(mcpAccess.tokenHash, tokenHash)).get()
}

export async function saveAccess(tx: DbOrTx, row: AccessRow): Promise<void> {
  await tx
    .insert(mcpAccess)
    .values(row)
    .onConflictDoUpdate({ target: mcpAccess.tenantId, set: { ...row } })
    .run()
}

export async function touchAccess(tx: DbOrTx, tenantId: string, at: number): Promise<void> {
  await tx.update(mcpAccess).set({ lastUsedAt: at }).where(eq(mcpAccess.tenantId, tenantId)).run()
}

export async function insertClient(tx: DbOrTx, row: ClientRow): Promise<void> {
  await tx.insert(mcpClients).values(row).run()
}

export async function findClient(db: DbOrTx, id: string): Promise<ClientRow | undefined> {
  return await db.select().from(mcpClients).where(eq(mcpClients.id, id)).get()
}

export async function connectionsOf(db: DbOrTx, tenantId: string): Promise<(ConnectionRow & { name: string })[]> {
  return await db
    .select({
      tenantId: mcpConnections.tenantId,
      clientId: mcpConnections.clientId,
      userId: mcpConnections.userId,
      connectedAt: mcpConnections.connectedAt,
      lastUsedAt: mcpConnections.lastUsedAt,
      name: mcpClients.name,
    })
    .from(mcpConnections)
    .innerJoin(mcpClients, eq(mcpClients.id, mcpConnections.clientId))
    .where(eq(mcpConnections.tenantId, tenantId))
    .orderBy(mcpConnections.connectedAt)
    .all()
}

export async function findConnection(db: DbOrTx, tenantId: string, clientId: string): Promise<ConnectionRow | undefined> {
  return await db
    .select()
    .from(mcpConnections)
    .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
    .get()
}

/** Connects the client to the tenant (kept as it is when already connected). */
export async function connect(tx: DbOrTx, row: ConnectionRow): Promise<void> {
  await tx.insert(mcpConnections).values(row).onConflictDoNothing().run()
}

export async function touchConnection(tx: DbOrTx, tenantId: string, clientId: string, at: number): Promise<void> {
  await tx
    .update(mcpConnections)
    .set({ lastUsedAt: at })
    .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
    .run()
}

/**
 * Disconnects the client from the tenant: its tokens are revoked, and so are its codes not yet
 * exchanged (issue 34.5), so no approval given before the disconnect can reconnect it.
 */
export async function disconnect(tx: DbOrTx, tenantId: string, clientId: string, at: number): Promise<boolean> {
  await revokeCodes(tx, tenantId, clientId, at)
  const gone = changesOf(
    await tx
      .delete(mcpConnections)
      .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
      .run(),
  )
  await tx
    .update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.tenantId, tenantId), eq(mcpTokens.clientId, clientId), isNull(mcpTokens.revokedAt)))
    .run()
  return gone > 0
}

export async function insertCode(tx: DbOrTx, row: CodeRow): Promise<void> {
  await tx.insert(mcpCodes).values(row).run()
}

export async function findCode(db: DbOrTx, codeHash: string): Promise<CodeRow | undefined> {
  return await db.select().from(mcpCodes).where(eq(mcpCodes.codeHash, codeHash)).get()
}

/**
 * Revokes the tenant's codes not yet exchanged (of one client, or all): marked used with no token
 * family, which the token endpoint reads as revoked.
 */
async function revokeCodes(tx: DbOrTx, tenantId: string, clientId: string | null, at: number): Promise<void> {
  await tx
    .update(mcpCodes)
    .set({ usedAt: at, familyId: null })
    .where(and(eq(mcpCodes.tenantId, tenantId), clientId === null ? undefined : eq(mcpCodes.clientId, clientId), isNull(mcpCodes.usedAt)))
    .run()
}

/** Spends the code: true for the one caller that moved it from unused to used. */
export async function spendCode(tx: DbOrTx, codeHash: string, at: number, familyId: string | null): Promise<boolean> {
  return (
    changesOf(
      await tx
        .update(mcpCodes)
        .set({ usedAt: at, familyId })
        .where(and(eq(mcpCodes.codeHash, codeHash), isNull(mcpCodes.usedAt)))
        .run(),
    ) === 1
  )
}

export async function insertToken(tx: DbOrTx, row: TokenRow): Promise<void> {
  await tx.insert(mcpTokens).values(row).run()
}

export async function findToken(db: DbOrTx, tokenHash: string): Promise<TokenRow | undefined> {
  return await db.select().from(mcpTokens).where(eq(mcpTokens.tokenHash, tokenHash)).get()
}

/** Marks a refresh token used: true for the one caller that rotated it. */
export async function useRefresh(tx: DbOrTx, id: string, at: number): Promise<boolean> {
  return (
    changesOf(
      await tx
        .update(mcpTokens)
        .set({ usedAt: at })
        .where(and(eq(mcpTokens.id, id), isNull(mcpTokens.usedAt), isNull(mcpTokens.revokedAt)))
        .run(),
    ) === 1
  )
}

export async function revokeFamily(tx: DbOrTx, familyId: string, at: number): Promise<void> {
  await tx
    .update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.familyId, familyId), isNull(mcpTokens.revokedAt)))
    .run()
}

/** Every OAuth token and every unexchanged code of the tenant stops working (access switched off). */
export async function revokeTenantTokens(tx: DbOrTx, tenantId: string, at: number): Promise<void> {
  await revokeCodes(tx, tenantId, null, at)
  await tx
    .update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.tenantId, tenantId), isNull(mcpTokens.revokedAt)))
    .run()
}

/** One token stops working (RFC 7009 revocation of an access token). */
export async function revokeToken(tx: DbOrTx, id: string, at: number): Promise<void> {
  await tx
    .update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.id, id), isNull(mcpTokens.revokedAt)))
    .run()
}
