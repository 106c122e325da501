import { and, eq, isNull } from 'drizzle-orm'
import { mcpAccess, mcpClients, mcpCodes, mcpConnections, mcpTokens } from '../../../db/schema/mcp'
import { changesOf, type DbOrTx } from '../../../db/client'

export type AccessRow = typeof mcpAccess.$inferSelect
export type ClientRow = typeof mcpClients.$inferSelect
export type ConnectionRow = typeof mcpConnections.$inferSelect
export type CodeRow = typeof mcpCodes.$inferSelect
export type TokenRow = typeof mcpTokens.$inferSelect

export function findAccess(db: DbOrTx, tenantId: string): AccessRow | undefined {
  return db.select().from(mcpAccess).where(eq(mcpAccess.tenantId, tenantId)).get()
}

export function findAccessByHash(db: DbOrTx, tokenHash: string): AccessRow | undefined {
  return db.select().from(mcpAccess).where(eq(mcpAccess.tokenHash, tokenHash)).get()
}

export function saveAccess(tx: DbOrTx, row: AccessRow): void {
  tx.insert(mcpAccess)
    .values(row)
    .onConflictDoUpdate({ target: mcpAccess.tenantId, set: { ...row } })
    .run()
}

export function touchAccess(tx: DbOrTx, tenantId: string, at: number): void {
  tx.update(mcpAccess).set({ lastUsedAt: at }).where(eq(mcpAccess.tenantId, tenantId)).run()
}

export function insertClient(tx: DbOrTx, row: ClientRow): void {
  tx.insert(mcpClients).values(row).run()
}

export function findClient(db: DbOrTx, id: string): ClientRow | undefined {
  return db.select().from(mcpClients).where(eq(mcpClients.id, id)).get()
}

export function connectionsOf(db: DbOrTx, tenantId: string): (ConnectionRow & { name: string })[] {
  return db
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

export function findConnection(db: DbOrTx, tenantId: string, clientId: string): ConnectionRow | undefined {
  return db
    .select()
    .from(mcpConnections)
    .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
    .get()
}

/** Connects the client to the tenant (kept as it is when already connected). */
export function connect(tx: DbOrTx, row: ConnectionRow): void {
  tx.insert(mcpConnections).values(row).onConflictDoNothing().run()
}

export function touchConnection(tx: DbOrTx, tenantId: string, clientId: string, at: number): void {
  tx.update(mcpConnections)
    .set({ lastUsedAt: at })
    .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
    .run()
}

/**
 * Disconnects the client from the tenant: its tokens are revoked, and so are its codes not yet
 * exchanged (issue 34.5), so no approval given before the disconnect can reconnect it.
 */
export function disconnect(tx: DbOrTx, tenantId: string, clientId: string, at: number): boolean {
  revokeCodes(tx, tenantId, clientId, at)
  const gone = changesOf(
    tx
      .delete(mcpConnections)
      .where(and(eq(mcpConnections.tenantId, tenantId), eq(mcpConnections.clientId, clientId)))
      .run(),
  )
  tx.update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.tenantId, tenantId), eq(mcpTokens.clientId, clientId), isNull(mcpTokens.revokedAt)))
    .run()
  return gone > 0
}

export function insertCode(tx: DbOrTx, row: CodeRow): void {
  tx.insert(mcpCodes).values(row).run()
}

export function findCode(db: DbOrTx, codeHash: string): CodeRow | undefined {
  return db.select().from(mcpCodes).where(eq(mcpCodes.codeHash, codeHash)).get()
}

/**
 * Revokes the tenant's codes not yet exchanged (of one client, or all): marked used with no token
 * family, which the token endpoint reads as revoked.
 */
function revokeCodes(tx: DbOrTx, tenantId: string, clientId: string | null, at: number): void {
  tx.update(mcpCodes)
    .set({ usedAt: at, familyId: null })
    .where(and(eq(mcpCodes.tenantId, tenantId), clientId === null ? undefined : eq(mcpCodes.clientId, clientId), isNull(mcpCodes.usedAt)))
    .run()
}

/** Spends the code: true for the one caller that moved it from unused to used. */
export function spendCode(tx: DbOrTx, codeHash: string, at: number, familyId: string | null): boolean {
  return (
    changesOf(
      tx
        .update(mcpCodes)
        .set({ usedAt: at, familyId })
        .where(and(eq(mcpCodes.codeHash, codeHash), isNull(mcpCodes.usedAt)))
        .run(),
    ) === 1
  )
}

export function insertToken(tx: DbOrTx, row: TokenRow): void {
  tx.insert(mcpTokens).values(row).run()
}

export function findToken(db: DbOrTx, tokenHash: string): TokenRow | undefined {
  return db.select().from(mcpTokens).where(eq(mcpTokens.tokenHash, tokenHash)).get()
}

/** Marks a refresh token used: true for the one caller that rotated it. */
export function useRefresh(tx: DbOrTx, id: string, at: number): boolean {
  return (
    changesOf(
      tx
        .update(mcpTokens)
        .set({ usedAt: at })
        .where(and(eq(mcpTokens.id, id), isNull(mcpTokens.usedAt), isNull(mcpTokens.revokedAt)))
        .run(),
    ) === 1
  )
}

export function revokeFamily(tx: DbOrTx, familyId: string, at: number): void {
  tx.update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.familyId, familyId), isNull(mcpTokens.revokedAt)))
    .run()
}

/** Every OAuth token and every unexchanged code of the tenant stops working (access switched off). */
export function revokeTenantTokens(tx: DbOrTx, tenantId: string, at: number): void {
  revokeCodes(tx, tenantId, null, at)
  tx.update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.tenantId, tenantId), isNull(mcpTokens.revokedAt)))
    .run()
}

/** One token stops working (RFC 7009 revocation of an access token). */
export function revokeToken(tx: DbOrTx, id: string, at: number): void {
  tx.update(mcpTokens)
    .set({ revokedAt: at })
    .where(and(eq(mcpTokens.id, id), isNull(mcpTokens.revokedAt)))
    .run()
}
