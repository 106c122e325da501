import { blob, index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

// Times are integer microseconds since the epoch throughout (src/platform/time.ts).

/** Stored responses of operations that take Idempotency-Key (src/platform/idempotency.ts). */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    scope: text('scope').notNull(), // tenant id, or "public" for operations without a tenant
    operation: text('operation').notNull(), // "POST /api/v1/tokens"
    key: text('key').notNull(),
    fingerprint: text('fingerprint').notNull(), // sha256 of method, route and canonical body
    /** in_progress → executed (the request's first write committed with it) → completed (answer stored). */
    state: text('state', { enum: ['in_progress', 'executed', 'completed'] }).notNull(),
    lockedUntil: integer('locked_until').notNull(),
    responseStatus: integer('response_status'),
    // AES-GCM sealed {headers, body}: a replayed response may hold a secret shown once.
    responseBox: blob('response_box', { mode: 'buffer' }),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.operation, t.key] }), index('idempotency_keys_created_at').on(t.createdAt)],
)

/**
 * GCRA state per rate-limit bucket, shared by every process on the database. Only the primary key
 * is indexed: every counted request updates `tat` and `expires_at`, and on PostgreSQL an update
 * that changes no indexed column stays on its page (a HOT update, no index entry written), which
 * halved the shared limit's cost per request (migration 0044 / pg 0017). The sweep of drained
 * buckets scans the table, a row per active caller.
 */
export const rateLimits = sqliteTable('rate_limits', {
  bucket: text('bucket').primaryKey(),
  tat: integer('tat').notNull(), // theoretical arrival time, µs
  expiresAt: integer('expires_at').notNull(),
})

/**
 * One row (id 1) whose counter moves whenever something a caller is made of changes: a token
 * revoked, expired or deleted, a session signed out or deleted, a member's role changed or the
 * member removed, the tenant's plan or account state changed (triggers of migration 0041 / pg
 * 0015). Every request reads it once; a verified token or session is trusted from memory only
 * while it is unchanged
 * (src/modules/tokens, docs/scale-out.md "Credentials").
 */
export const authEpoch = sqliteTable('auth_epoch', {
  id: integer('id').primaryKey(),
  n: integer('n').notNull(),
})

/** One row per scheduled period a job has claimed, so no period runs twice across processes. */
export const jobRuns = sqliteTable(
  'job_runs',
  {
    job: text('job').notNull(),
    period: text('period').notNull(),
    holder: text('holder').notNull(),
    startedAt: integer('started_at').notNull(),
    finishedAt: integer('finished_at'),
    /** `partial`: the run went on past tenants whose part failed (src/platform/jobs.ts TenantWalk); the detail names them. */
    outcome: text('outcome', { enum: ['running', 'succeeded', 'partial', 'failed'] }).notNull(),
    detail: text('detail'),
  },
  (t) => [primaryKey({ columns: [t.job, t.period] })],
)

/** A lease per job: only its holder runs the job until it expires, whatever the period. */
export const jobLeases = sqliteTable('job_leases', {
  job: text('job').primaryKey(),
  holder: text('holder').notNull(),
  leasedUntil: integer('leased_until').notNull(),
})
