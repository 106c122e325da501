import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { startTestApp, type TestApp } from '../support/app'
import { expectProblem } from '../support/problem'

/** Entity tags on the probe resource: strong ETag on reads, If-None-Match → 304, If-Match → 412 (RFC 9110 §13.1). */

const PROBES = '/api/v1/_test/probes'

let app: TestApp
beforeAll(async () => {
  app = await startTestApp()
})
afterAll(() => app.close())

async function newProbe(value = 'v1'): Promise<{ url: string; tag: string }> {
  const res = await app.fetch(PROBES, { method: 'POST', json: { value } })
  expect(res.status).toBe(201)
  const { id } = (await res.json()) as { id: string }
  return { url: `${PROBES}/${id}`, tag: res.headers.get('etag')! }
}

const patch = (url: string, value: string, ifMatch?: string) =>
  app.fetch(url, { method: 'PATCH', json: { value }, headers: ifMatch === undefined ? {} : { 'if-match': ifMatch } })

const probeValue = async (url: string) => ((await (await app.fetch(url)).json()) as { value: string }).value

describe('reading with entity tags', () => {
  test('a read returns a strong ETag that is the quoted version', async () => {
    const { url } = await newProbe()
    const res = await app.fetch(url)
    expect(res.status).toBe(200)
    const tag = res.headers.get('etag')!
    expect(tag).toMatch(/^"[^"]+"$/)
    expect(tag).toBe(`"${((await res.json()) as { version: number }).version}"`)
  })

  test('If-None-Match with the current tag answers 304 with the tag and no body', async () => {
    const { url, tag } = await newProbe()
    const res = await app.fetch(url, { headers: { 'if-none-match': tag } })
    expect(res.status).toBe(304)
    expect(res.headers.get('etag')).toBe(tag)
    expect(await res.text()).toBe('')
  })

  test('If-None-Match with an old tag, another tag in a list, or the weak form of the current tag behaves as RFC 9110 says', async () => {
    const { url, tag } = await newProbe()
    expect((await app.fetch(url, { headers: { 'if-none-match': '"999"' } })).status).toBe(200)
    expect((await app.fetch(url, { headers: { 'if-none-match': `"999", ${tag}` } })).status).toBe(304)
    // If-None-Match uses weak comparison: W/"1" matches "1".
    expect((await app.fetch(url, { headers: { 'if-none-match': `W/${tag}` } })).status).toBe(304)
    expect((await app.fetch(url, { headers: { 'if-none-match': '*' } })).status).toBe(304)
  })

  test('after a change the old tag no longer answers 304', async () => {
    const { url, tag } = await newProbe()
    expect((await patch(url, 'v2')).status).toBe(200)
    const res = await app.fetch(url, { headers: { 'if-none-match': tag } })
    expect(res.status).toBe(200)
    expect(res.headers.get('etag')).not.toBe(tag)
  })
})

describe('writing with If-Match', () => {
  test('a change with a stale If-Match answers 412 conflict and changes nothing', async () => {
    const { url, tag } = await newProbe('original')
    expect((await patch(url, 'first writer', tag)).status).toBe(200)
    const res = await patch(url, 'second writer', tag)
    await expectProblem(res, 412, 'conflict')
    expect(await probeValue(url)).toBe('first writer')
  })

  test('a change with the current tag succeeds and returns the next tag', async () => {
    const { url, tag } = await newProbe()
    const res = await patch(url, 'changed', tag)
    expect(res.status).toBe(200)
    const next = res.headers.get('etag')!
    expect(next).not.toBe(tag)
    const body = (await res.json()) as { value: string; version: number }
    expect(body).toMatchObject({ value: 'changed', version: 2 })
    expect(next).toBe(`"${body.version}"`)
    expect((await app.fetch(url)).headers.get('etag')).toBe(next)
  })

  test('If-Match "*" passes for an existing resource', async () => {
    const { url } = await newProbe()
    expect((await patch(url, 'star', '*')).status).toBe(200)
    expect(await probeValue(url)).toBe('star')
  })

  test('a list in If-Match passes when one of its tags is current', async () => {
    const { url, tag } = await newProbe()
    expect((await patch(url, 'listed', `"41", ${tag}`)).status).toBe(200)
  })

  test('a weak tag never satisfies If-Match, even when its version is current', async () => {
    const { url, tag } = await newProbe('kept')
    expect(tag).toBe('"1"')
    await expectProblem(await patch(url, 'weak', 'W/"1"'), 412, 'conflict')
    expect(await probeValue(url)).toBe('kept')
  })

  test('an If-Match header over 256 characters is refused as invalid', async () => {
    const { url } = await newProbe()
    const doc = await expectProblem(await patch(url, 'long', `"${'9'.repeat(300)}"`), 422, 'validation_failed')
    expect(doc.errors).toEqual([{ path: '/if-match', code: 'too_long' }])
  })

  test('without If-Match the change is unconditional', async () => {
    const { url } = await newProbe()
    expect((await patch(url, 'no guard')).status).toBe(200)
    expect((await patch(url, 'no guard again')).status).toBe(200)
    expect(((await (await app.fetch(url)).json()) as { version: number }).version).toBe(3)
  })

  test('of two writers holding the same tag exactly one wins', async () => {
    const { url, tag } = await newProbe()
    const [a, b] = await Promise.all([patch(url, 'writer a', tag), patch(url, 'writer b', tag)])
    expect([a.status, b.status].sort()).toEqual([200, 412])
    const winner = a.status === 200 ? 'writer a' : 'writer b'
    expect(await probeValue(url)).toBe(winner)
  })

  test('changing a probe that does not exist answers 404, whatever the tag', async () => {
    await expectProblem(await patch(`${PROBES}/${crypto.randomUUID()}`, 'x', '"1"'), 404, 'not_found')
  })
})
