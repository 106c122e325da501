import { describe, expect, test } from 'bun:test'
import { assertIfMatch, etagOf, ifNoneMatchHits, notModified } from '../../src/platform/etag'
import { problemFrom } from './fixtures/problem'

const current = etagOf(3)

describe('If-Match (strong comparison)', () => {
  test('an entity tag is the version in quotes', () => {
    expect(etagOf(3)).toBe('"3"')
    expect(etagOf('abc')).toBe('"abc"')
  })

  test.each([
    ['no header', null],
    ['an undefined header', undefined],
    ['the current tag', '"3"'],
    ['the current tag with spaces around it', '  "3"  '],
    ['a star', '*'],
    ['a list holding the current tag', '"1", "2", "3"'],
    ['a list holding a star', '"1", *'],
  ])('%s lets the write through', (_what, header) => {
    expect(() => assertIfMatch(header, current)).not.toThrow()
  })

  test.each([
    ['a stale tag', '"2"'],
    ['a weak copy of the current tag', 'W/"3"'],
    ['a list whose only match is weak', '"1", W/"3"'],
    ['the version without quotes', '3'],
    ['a tag that only starts like the current one', '"33"'],
    ['an empty header', ''],
  ])('%s answers 412', (_what, header) => {
    const e = problemFrom(() => assertIfMatch(header, current))
    expect(e.status).toBe(412)
    expect(e.code).toBe('conflict')
  })

  test('a header over 256 characters answers 422 on /if-match, even when it holds the current tag', () => {
    const header = `"3", ${'"0", '.repeat(60)}"9"`
    expect(header.length).toBeGreaterThan(256)
    const e = problemFrom(() => assertIfMatch(header, current))
    expect(e.status).toBe(422)
    expect(e.code).toBe('validation_failed')
    expect(e.errors?.[0]?.path).toBe('/if-match')
  })

  test('a header of exactly 256 characters is still read', () => {
    const header = `"3",${' '.repeat(256 - 4)}`
    expect(header.length).toBe(256)
    expect(() => assertIfMatch(header, current)).not.toThrow()
  })
})

describe('If-None-Match (weak comparison)', () => {
  test.each([
    ['the current tag', '"3"', '"3"'],
    ['a weak copy of the current tag', 'W/"3"', '"3"'],
    ['the strong tag against a weak current tag', '"3"', 'W/"3"'],
    ['a star', '*', '"3"'],
    ['a list holding the current tag', '"1", W/"3"', '"3"'],
  ])('%s means the client copy is current', (_what, header, tag) => {
    expect(ifNoneMatchHits(header, tag)).toBe(true)
  })

  test.each([
    ['no header', null],
    ['a stale tag', '"2"'],
    ['a stale weak tag', 'W/"2"'],
    ['an empty header', ''],
  ])('%s means the client needs the body', (_what, header) => {
    expect(ifNoneMatchHits(header, current)).toBe(false)
  })

  test('a header over 256 characters answers 422 on /if-none-match', () => {
    const e = problemFrom(() => ifNoneMatchHits('"1",'.repeat(70), current))
    expect(e.status).toBe(422)
    expect(e.errors?.[0]?.path).toBe('/if-none-match')
  })

  test('a 304 carries the tag and the request id and no body', async () => {
    const res = notModified('"3"', 'req-1')
    expect(res.status).toBe(304)
    expect(res.headers.get('etag')).toBe('"3"')
    expect(res.headers.get('x-request-id')).toBe('req-1')
    expect(await res.text()).toBe('')
  })
})
