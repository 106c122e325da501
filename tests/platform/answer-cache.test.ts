import { describe, expect, test } from 'bun:test'
import { Type } from '@sinclair/typebox'
import { AnswerCache, responseCheck } from '../../src/platform/answer-cache'

/** src/platform/answer-cache.ts: built answers of snapshot reads, kept by tenant and strong tag. */
describe('answer cache', () => {
  const Page = Type.Object({ items: Type.Array(Type.String()) }, { additionalProperties: false })
  const check = responseCheck(Page)

  const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

  test('an answer is built and checked once per key, then served as the same bytes', () => {
    const cache = new AnswerCache()
    let built = 0
    const build = () => {
      built++
      return { items: ['a', 'b'] }
    }
    const first = cache.json('t1\n"tag"', build, check)
    expect(text(first)).toBe('{"items":["a","b"]}')
    expect(cache.json('t1\n"tag"', build, check)).toBe(first)
    expect(built).toBe(1)
    // Another key (another tenant, or a new tag) is built anew.
    cache.json('t2\n"tag"', build, check)
    expect(built).toBe(2)
  })

  test('an answer its schema refuses is an error, and nothing is kept', () => {
    const cache = new AnswerCache()
    const leaky = () => ({ items: ['a'], secret: 'x' })
    expect(() => cache.json('k', leaky, check)).toThrow(/response schema/)
    let built = 0
    const kept = cache.json(
      'k',
      () => {
        built++
        return { items: [] }
      },
      check,
    )
    expect(text(kept)).toBe('{"items":[]}')
    expect(built).toBe(1)
  })
})
