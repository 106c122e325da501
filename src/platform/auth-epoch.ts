import { eq } from 'drizzle-orm'
import { authEpoch } from '../../db/schema/platform'
import { preparedQuery, type DbOrTx } from '../../db/client'

/**
 * The counter that moves whenever something a caller is made of changes (a token revoked, expired
 * or deleted; a session signed out or deleted; a member's role or tenant changed or the member
 * removed; the tenant's plan or account state changed): database triggers move it in the
 * transaction of the change, whichever process or tool makes it (migration 0041 / pg 0015). A verification cached with the value read
 * before it was made is good while the value is the same (docs/scale-out.md "Credentials").
 */
const epochRead = preparedQuery((db) => db.select({ n: authEpoch.n }).from(authEpoch).where(eq(authEpoch.id, 1)).prepare())

export async function readAuthEpoch(db: DbOrTx): Promise<number> {
  // The row is written by the migration; absent only if someone deleted it, and then nothing is trusted from memory.
  return (await epochRead(db).get())?.n ?? -1
}

/**
 * Verifications kept in memory, by the SHA-256 of the credential, each with the counter's value
 * read before the rows it was made from. Bounded: past `max` entries the oldest go first.
 */
export class VerifiedCredentials<T> {
  readonly #entries = new Map<string, { epoch: number; value: T }>()

  constructor(private readonly max = 10_000) {}

  /** The value kept for `key` while `epoch` is the one it was verified under, else undefined. */
  get(key: string, epoch: number): T | undefined {
    const hit = this.#entries.get(key)
    if (hit === undefined) return undefined
    if (epoch >= 0 && hit.epoch === epoch) return hit.value
    this.#entries.delete(key)
    return undefined
  }

  /** The value kept for `key` and the counter's value it was verified under, whatever the counter is now. */
  peek(key: string): { epoch: number; value: T } | undefined {
    return this.#entries.get(key)
  }

  set(key: string, epoch: number, value: T): void {
    if (epoch < 0) return
    this.#entries.delete(key)
    if (this.#entries.size >= this.max) {
      const oldest = this.#entries.keys().next()
      if (!oldest.done) this.#entries.delete(oldest.value)
    }
    this.#entries.set(key, { epoch, value })
  }

  get size(): number {
    return this.#entries.size
  }
}
