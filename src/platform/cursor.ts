import { hmac } from './secrets'
import { problems } from './problem'

/**
 * Opaque, tamper-proof page cursors: base64url(JSON position) + "." + a MAC over the position and
 * the list it belongs to (operation, tenant, filters). A cursor edited, forged, or carried to another
 * list or tenant answers 422 on /cursor.
 */

const MAC_CHARS = 22 // 132 bits of HMAC-SHA256

export function encodeCursor(key: Buffer, scope: string, position: unknown): string {
  const body = Buffer.from(JSON.stringify(position)).toString('base64url')
  return `${body}.${mac(key, scope, body)}`
}

export function decodeCursor<T>(key: Buffer, scope: string, cursor: string): T {
  const invalid = () => problems.field('/cursor', 'invalid_cursor', 'the cursor is not one this list issued')
  if (cursor.length > 512) throw invalid()
  const dot = cursor.indexOf('.')
  if (dot <= 0) throw invalid()
  const body = cursor.slice(0, dot)
  const given = cursor.slice(dot + 1)
  if (given.length !== MAC_CHARS || given !== mac(key, scope, body)) throw invalid()
  try {
    return JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as T
  } catch {
    throw invalid()
  }
}

function mac(key: Buffer, scope: string, body: string): string {
  return hmac(key, `${scope}\n${body}`).toString('base64url').slice(0, MAC_CHARS)
}

export const DEFAULT_PAGE_SIZE = 50
export const MAX_PAGE_SIZE = 200

export type Page<T> = { items: T[]; next_cursor: string | null }

/**
 * Turns `limit + 1` fetched rows into a page: the extra row only says there is more, and the last
 * returned row's position becomes the next cursor.
 */
export function toPage<Row, Item>(
  rows: Row[],
  limit: number,
  position: (row: Row) => unknown,
  cursor: { key: Buffer; scope: string },
  map: (row: Row) => Item,
): Page<Item> {
  const more = rows.length > limit
  const kept = more ? rows.slice(0, limit) : rows
  return {
    items: kept.map(map),
    next_cursor: more ? encodeCursor(cursor.key, cursor.scope, position(kept[kept.length - 1]!)) : null,
  }
}

/**
 * The whole list sequence every paginated read shares: page size (default 50), the cursor decoded
 * for this list only (`scope` names the list: operation, tenant, filters), `limit + 1` rows fetched
 * after the position, the page and its next cursor.
 */
/** paginate over rows already in memory (the fleet snapshot's): the same cursor rules, no await. */
export function paginateInMemory<Row, Item, Position>(
  key: Buffer,
  list: {
    scope: string
    input: { cursor?: string; limit?: number }
    fetch: (after: Position | undefined, take: number) => Row[]
    position: (row: Row) => Position
    view: (row: Row) => Item
  },
): Page<Item> {
  const limit = list.input.limit ?? DEFAULT_PAGE_SIZE
  const after = list.input.cursor ? decodeCursor<Position>(key, list.scope, list.input.cursor) : undefined
  return toPage(list.fetch(after, limit + 1), limit, list.position, { key, scope: list.scope }, list.view)
}

export async function paginate<Row, Item, Position>(
  key: Buffer,
  list: {
    scope: string
    input: { cursor?: string; limit?: number }
    fetch: (after: Position | undefined, take: number) => Row[] | Promise<Row[]>
    position: (row: Row) => Position
    /** A row's view; it may read more (awaited row by row, in order). */
    view: (row: Row) => Item | Promise<Item>
  },
): Promise<Page<Item>> {
  const limit = list.input.limit ?? DEFAULT_PAGE_SIZE
  const after = list.input.cursor ? decodeCursor<Position>(key, list.scope, list.input.cursor) : undefined
  const page = toPage(await list.fetch(after, limit + 1), limit, list.position, { key, scope: list.scope }, (row) => row)
  const items: Item[] = []
  for (const row of page.items) items.push(await list.view(row))
  return { items, next_cursor: page.next_cursor }
}
