/** The messages between db/pg/database.ts (the main thread) and db/pg/worker.ts. */
export type PgRequest =
  | { id: number; kind: 'open' | 'close' }
  | { id: number; kind: 'exec'; sql: string }
  | { id: number; kind: 'values' | 'objects' | 'run'; sql: string; params: unknown[] }

export type PgReply =
  | { id: number; rows: unknown[]; changes: number; error?: undefined }
  | { id: number; error: { message: string; sqlState: string; constraint: string | null } }

export type PgSettings = {
  /** Longest wait for a row lock another transaction holds (lock_timeout): the service keeps it short and retries. */
  lockTimeoutMs: number
  /** Longest any one statement may run (statement_timeout): a stuck database never freezes the process. */
  statementTimeoutMs: number
  connectTimeoutMs: number
}
