import { describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/**
 * Issue 35: the README and the docs linked to `../shared/...`, files beside the repository, broken
 * in any clone. Every relative link of the README, docs/ and agent/README.md resolves to a file or
 * folder inside the repository.
 */

const REPO = resolve(import.meta.dir, '../..')
const pages = [
  'README.md',
  'agent/README.md',
  ...readdirSync(join(REPO, 'docs'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
]

/** Markdown link targets outside code spans and fences: `[text](target)`. */
function linkTargets(text: string): string[] {
  const prose = text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '')
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!)
}

describe('links in the documentation stay inside the repository', () => {
  test.each(pages)('%s', (page) => {
    const bad: string[] = []
    for (const target of linkTargets(readFileSync(join(REPO, page), 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('#')) continue
      const path = resolve(dirname(join(REPO, page)), decodeURI(target.split('#')[0]!))
      const inside = !relative(REPO, path).startsWith('..')
      if (!inside || !existsSync(path)) bad.push(target)
    }
    expect(bad).toEqual([])
  })
})
