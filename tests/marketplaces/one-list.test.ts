import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { MARKETPLACES } from '../../src/platform/marketplace-id'
import { startTestApp, type TestApp } from '../support/app'

/**
 * Issue 37 finding 3: the marketplaces are listed once (src/platform/marketplace-id.ts, with each
 * platform's facts in src/modules/marketplaces/adapters/marketplaces.catalogue.ts), so adding one
 * touches the adapters folder and that list (docs/development.md "Adding a marketplace").
 */

const root = join(import.meta.dir, '..', '..')
const THE_LIST = 'src/platform/marketplace-id.ts'

function sources(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => relative(root, join(e.parentPath, e.name)))
}

// Spellings of the whole list: an array or union of both ids, a TypeBox union of their literals, or an object keyed by both.
const LIST_SPELLINGS = [
  /['"]marketplace_a['"]\s*,\s*['"]marketplace_b['"]/,
  /['"]marketplace_a['"]\s*\|\s*['"]marketplace_b['"]/,
  /Literal\(\s*['"]marketplace_a['"]\s*\)\s*,\s*(Type|t)\.Literal\(\s*['"]marketplace_b['"]/,
  /\bmarketplace_a:\s*Type\.Optional\([^)]*\),\s*marketplace_b:/,
]

describe('one list of marketplaces', () => {
  test('no file of the service, its schema or its jobs spells the list of marketplaces but the one list', () => {
    const offenders = [...sources('src'), ...sources('db/schema'), ...sources('jobs')]
      .filter((file) => file !== THE_LIST)
      .filter((file) => {
        const text = readFileSync(join(root, file), 'utf8')
        return LIST_SPELLINGS.some((re) => re.test(text))
      })
    expect(offenders).toEqual([])
  })

  describe('the served OpenAPI document', () => {
    let app: TestApp
    let doc: unknown
    beforeAll(async () => {
      app = await startTestApp()
      const res = await app.fetch('/api/v1/openapi.json')
      expect(res.status).toBe(200)
      doc = await res.json()
    })
    afterAll(() => app.close())

    test('every enumeration of marketplaces in it is the one list, in its order (null aside on a nullable field)', () => {
      const found: string[][] = []
      const walk = (node: unknown): void => {
        if (Array.isArray(node)) {
          for (const item of node) walk(item)
          return
        }
        if (!node || typeof node !== 'object') return
        const o = node as Record<string, unknown>
        const consts = Array.isArray(o.anyOf) ? (o.anyOf as { const?: unknown }[]).map((s) => s?.const).filter((c) => c !== undefined) : []
        if (consts.some((c) => typeof c === 'string' && c.startsWith('marketplace_'))) found.push(consts as string[])
        if (Array.isArray(o.enum) && o.enum.some((c) => typeof c === 'string' && /^marketplace_[a-z]$/.test(c)))
          found.push((o.enum as unknown[]).filter((c) => c !== null) as string[]) // a nullable field lists null too
        Object.values(o).forEach(walk)
      }
      walk(doc)
      expect(found.length).toBeGreaterThan(10)
      for (const list of found) expect(list).toEqual([...MARKETPLACES])
    })
  })
})
