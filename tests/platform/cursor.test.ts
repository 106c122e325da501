import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { decodeCursor, encodeCursor, toPage } from '../../src/platform/cursor'
import { deriveKey } from '../../src/platform/secrets'
import { problemFrom } from './fixtures/problem'

const key = deriveKey(Buffer.alloc(32, 7), 'cursor')
const otherKey = deriveKey(Buffer.alloc(32, 8), 'cursor')
const SCOPE = 'GET /servers\ntenant-a\nstatus=online'

function expectInvalidCursor(fn: () => unknown) {
  const e = problemFrom(fn)
  expect(e.code).toBe('validation_failed')
  expect(e.status).toBe(422)
  expect(e.errors?.[0]?.path).toBe('/cursor')
}

/** Replaces one character of `text` at `i` with another base64url character. */
function mutate(text: string, i: number): string {
  const c = text[i] === 'A' ? 'B' : 'A'
  return text.slice(0, i) + c + text.slice(i + 1)
}

describe('page cursors', () => {
  test('a cursor decodes to the position it was made from', () => {
    const position = { created_at: 1_790_000_000_123_456, id: '0190a0b0-0000-7000-8000-000000000001' }
    const cursor = encodeCursor(key, SCOPE, position)
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/)
    expect(decodeCursor(key, SCOPE, cursor)).toEqual(position)
  })

  test('any list position survives the round trip', () => {
    const position = fc.record({ t: fc.integer(), id: fc.uuid(), name: fc.string({ maxLength: 40 }), back: fc.boolean() })
    fc.assert(fc.property(position, (p) => expect(decodeCursor(key, SCOPE, encodeCursor(key, SCOPE, p))).toEqual(p)))
  })

  test('a cursor whose body was edited is refused on /cursor', () => {
    const cursor = encodeCursor(key, SCOPE, { id: 1 })
    const [, mac] = cursor.split('.')
    const forgedBody = Buffer.from(JSON.stringify({ id: 2 })).toString('base64url')
    expectInvalidCursor(() => decodeCursor(key, SCOPE, `${forgedBody}.${mac}`))
    expectInvalidCursor(() => decodeCursor(key, SCOPE, mutate(cursor, 0)))
  })

  test('a cursor whose MAC was edited, cut or lengthened is refused on /cursor', () => {
    const cursor = encodeCursor(key, SCOPE, { id: 1 })
    expectInvalidCursor(() => decodeCursor(key, SCOPE, mutate(cursor, cursor.length - 1)))
    expectInvalidCursor(() => decodeCursor(key, SCOPE, cursor.slice(0, -1)))
    expectInvalidCursor(() => decodeCursor(key, SCOPE, cursor + 'A'))
  })

  test('every single-character edit of a cursor is refused', () => {
    const cursor = encodeCursor(key, SCOPE, { t: 123, id: 'abc' })
    for (let i = 0; i < cursor.length; i++) {
      if (cursor[i] === '.') continue
      expectInvalidCursor(() => decodeCursor(key, SCOPE, mutate(cursor, i)))
    }
  })

  test('a cursor from another tenant or another list is refused', () => {
    const cursor = encodeCursor(key, SCOPE, { id: 1 })
    expectInvalidCursor(() => decodeCursor(key, 'GET /servers\ntenant-b\nstatus=online', cursor))
    expectInvalidCursor(() => decodeCursor(key, 'GET /servers\ntenant-a\nstatus=offline', cursor))
    expectInvalidCursor(() => decodeCursor(key, 'GET /commands\ntenant-a\nstatus=online', cursor))
  })

  test('a cursor signed with another deployment key is refused', () => {
    expectInvalidCursor(() => decodeCursor(key, SCOPE, encodeCursor(otherKey, SCOPE, { id: 1 })))
  })

  test('an over-long cursor is refused even when it is correctly signed', () => {
    const long = encodeCursor(key, SCOPE, { pad: 'x'.repeat(600) })
    expect(long.length).toBeGreaterThan(512)
    expectInvalidCursor(() => decodeCursor(key, SCOPE, long))
  })

  test.each([[''], ['.'], ['no-dot-at-all'], ['.AAAAAAAAAAAAAAAAAAAAAA'], ['e30.'], ['%%%.AAAAAAAAAAAAAAAAAAAAAA']])(
    'the malformed cursor "%s" is refused on /cursor',
    (text) => {
      expectInvalidCursor(() => decodeCursor(key, SCOPE, text))
    },
  )
})

describe('toPage', () => {
  const rows = Array.from({ length: 6 }, (_, i) => ({ id: i + 1, name: `row ${i + 1}` }))
  const cursor = { key, scope: SCOPE }
  const page = (n: number, limit: number) =>
    toPage(
      rows.slice(0, n),
      limit,
      (r) => ({ id: r.id }),
      cursor,
      (r) => r.name,
    )

  test('the extra fetched row means there is more: limit items and a cursor at the last one kept', () => {
    const p = page(6, 5)
    expect(p.items).toEqual(['row 1', 'row 2', 'row 3', 'row 4', 'row 5'])
    expect(p.next_cursor).not.toBeNull()
    expect(decodeCursor(key, SCOPE, p.next_cursor!)).toEqual({ id: 5 })
  })

  test('a page with no extra row is the last one', () => {
    expect(page(5, 5)).toEqual({ items: ['row 1', 'row 2', 'row 3', 'row 4', 'row 5'], next_cursor: null })
    expect(page(2, 5)).toEqual({ items: ['row 1', 'row 2'], next_cursor: null })
    expect(page(0, 5)).toEqual({ items: [], next_cursor: null })
  })

  test('the next cursor belongs to the list it came from', () => {
    const p = page(6, 5)
    expectInvalidCursor(() => decodeCursor(key, 'another list', p.next_cursor!))
  })
})
