import { entityKind } from 'drizzle-orm'
import { NoopLogger } from 'drizzle-orm/logger'
import { fillPlaceholders, type Query } from 'drizzle-orm/sql/sql'
import { BaseSQLiteDatabase, SQLiteAsyncDialect, SQLitePreparedQuery, SQLiteSession, type SelectedFieldsOrdered } from 'drizzle-orm/sqlite-core'
import * as drizzleUtils from 'drizzle-orm/utils'

/** What a write reports: rows changed, and SQLite's last row id (0 on PostgreSQL, which has RETURNING for that). */
export type RunResult = { changes: number; lastInsertRowid: number }

/**
 * Where statements go: the connection of the transaction the caller is in (found through
 * AsyncLocalStorage, db/sqlite-executor.ts and db/pg/pool.ts), or any connection outside one.
 * Values come back as bun:sqlite gives them: integers as numbers, booleans as 1 and 0, bytes as
 * Uint8Array. A method may answer synchronously (bun:sqlite) or with a promise (PostgreSQL).
 */
export interface Executor {
  values(sql: string, params: unknown[]): unknown[][] | Promise<unknown[][]>
  objects(sql: string, params: unknown[]): Record<string, unknown>[] | Promise<Record<string, unknown>[]>
  run(sql: string, params: unknown[]): RunResult | Promise<RunResult>
}

/**
 * The database as every repository sees it: Drizzle's SQLite query builder with promises for
 * results, on either database. The same object is used inside and outside a transaction: the
 * executor sends each statement to the connection of the transaction the caller is in.
 */
export type Db = BaseSQLiteDatabase<'async', RunResult>

/**
 * Drizzle's SQLite dialect speaking PostgreSQL's placeholders ($1, $2, …): the query builder's
 * output is otherwise what PostgreSQL reads (double-quoted identifiers, `returning`, `on conflict
 * … do update set … = excluded.…`, `limit $n offset $n`), with one exception handled here: the
 * columns of an `on conflict (…)` target, which the SQLite dialect names with their table and
 * PostgreSQL wants bare. Hand-written statements use the `sql` tag, so they get the same
 * placeholders (docs/scale-out.md "SQL for both databases").
 */
export class PostgresFlavouredDialect extends SQLiteAsyncDialect {
  static override readonly [entityKind]: string = 'GpuhqPostgresFlavouredDialect'

  override escapeParam(num: number): string {
    return `$${num + 1}`
  }

  override sqlToQuery(sql: Parameters<SQLiteAsyncDialect['sqlToQuery']>[0], invokeSource?: Parameters<SQLiteAsyncDialect['sqlToQuery']>[1]): Query {
    const query = super.sqlToQuery(sql, invokeSource)
    if (query.sql.includes(' on conflict (')) {
      query.sql = query.sql.replace(/ on conflict \(([^)]*)\)/g, (clause, target: string) => clause.replace(target, target.replace(/"(?:[^"]|"")+"\./g, '')))
    }
    return query
  }
}

type Fields = SelectedFieldsOrdered | undefined
/** Drizzle's row mapper (exported by drizzle-orm/utils, marked internal in its types): every driver's session uses it. */
const mapResultRow = (drizzleUtils as unknown as { mapResultRow(fields: SelectedFieldsOrdered, row: unknown[], joinsNotNullableMap: unknown): unknown })
  .mapResultRow
type Mapper = ((rows: unknown[][]) => unknown) | undefined

/** A statement built once (Drizzle's `.prepare()`, or a one-time query) and run through the executor. */
class ExecutorPreparedQuery extends SQLitePreparedQuery<{ type: 'async'; run: RunResult; all: unknown; get: unknown; values: unknown; execute: unknown }> {
  static override readonly [entityKind]: string = 'GpuhqPreparedQuery'

  constructor(
    private readonly executor: Executor,
    query: Query,
    private readonly fields: Fields,
    executeMethod: 'run' | 'all' | 'get',
    private readonly arrayMode: boolean,
    private readonly customResultMapper: Mapper,
  ) {
    super('async', executeMethod, query)
  }

  override async run(placeholderValues?: Record<string, unknown>): Promise<RunResult> {
    return await this.executor.run(this.query.sql, fillPlaceholders(this.query.params, placeholderValues ?? {}))
  }

  override async all(placeholderValues?: Record<string, unknown>): Promise<unknown[]> {
    const params = fillPlaceholders(this.query.params, placeholderValues ?? {})
    if (!this.fields && !this.customResultMapper) return await this.executor.objects(this.query.sql, params)
    const rows = await this.executor.values(this.query.sql, params)
    if (this.customResultMapper) return this.customResultMapper(rows) as unknown[]
    return rows.map((row) => mapResultRow(this.fields!, row, (this as unknown as { joinsNotNullableMap: unknown }).joinsNotNullableMap))
  }

  override async get(placeholderValues?: Record<string, unknown>): Promise<unknown> {
    const params = fillPlaceholders(this.query.params, placeholderValues ?? {})
    if (!this.fields && !this.customResultMapper) return (await this.executor.objects(this.query.sql, params))[0]
    const row = (await this.executor.values(this.query.sql, params))[0]
    if (!row) return undefined
    if (this.customResultMapper) return this.customResultMapper([row])
    return mapResultRow(this.fields!, row, (this as unknown as { joinsNotNullableMap: unknown }).joinsNotNullableMap)
  }

  override async values(placeholderValues?: Record<string, unknown>): Promise<unknown[]> {
    return await this.executor.values(this.query.sql, fillPlaceholders(this.query.params, placeholderValues ?? {}))
  }

  isResponseInArrayMode(): boolean {
    return this.arrayMode
  }
}

class ExecutorSession extends SQLiteSession<'async', RunResult, Record<string, never>, never> {
  static override readonly [entityKind]: string = 'GpuhqSession'
  readonly logger = new NoopLogger()

  constructor(
    dialect: SQLiteAsyncDialect,
    readonly executor: Executor,
  ) {
    super(dialect)
  }

  override prepareQuery(query: Query, fields: Fields, executeMethod: 'run' | 'all' | 'get', isResponseInArrayMode: boolean, customResultMapper?: Mapper) {
    return new ExecutorPreparedQuery(this.executor, query, fields, executeMethod, isResponseInArrayMode, customResultMapper) as never
  }

  override transaction(): never {
    throw new Error('use withTransaction (db/client.ts): it holds a connection for the transaction and runs it again on a serialization failure')
  }
}

/** The Drizzle database over `executor`, with SQLite's dialect or its PostgreSQL-flavoured variant. */
export function databaseOver(executor: Executor, dialect: 'sqlite' | 'postgres'): Db {
  const d = dialect === 'postgres' ? new PostgresFlavouredDialect() : new SQLiteAsyncDialect()
  return new BaseSQLiteDatabase('async', d, new ExecutorSession(d, executor) as never, undefined)
}
