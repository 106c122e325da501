import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'

/**
 * Docker is not available where the suite runs, so the image is rebuilt as a directory: the files
 * the Dockerfile's COPY lines name, filtered by .dockerignore as the build context is, installed as
 * its `bun install` RUN line does, with its ENV; then the operator commands run from that copy.
 * A file the image forgets (scripts/ once was) fails here, not on a newcomer's first `docker run`.
 */

const REPO = join(import.meta.dir, '../..')
type Instruction = { op: string; args: string }

/** Dockerfile instructions with continuation lines joined and comments dropped. */
function instructions(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const m = /^(\w+)\s+(.*)$/.exec(l)!
      return { op: m[1]!.toUpperCase(), args: m[2]! }
    })
}

/** .dockerignore as Docker reads it: the last pattern matching a path or one of its parents decides. */
function ignoredBy(text: string): (path: string) => boolean {
  const rules = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => ({ keep: l.startsWith('!'), glob: new Bun.Glob(l.replace(/^!/, '').replace(/\/+$/, '')) }))
  return (path) => {
    const parts = path.split('/')
    const candidates = parts.map((_, i) => parts.slice(0, i + 1).join('/'))
    let ignored = false
    for (const r of rules) if (candidates.some((c) => r.glob.match(c))) ignored = !r.keep
    return ignored
  }
}

function filesUnder(path: string): string[] {
  if (!lstatSync(join(REPO, path)).isDirectory()) return [path]
  return readdirSync(join(REPO, path)).flatMap((name) => filesUnder(`${path}/${name}`))
}

const dockerfile = instructions(readFileSync(join(REPO, 'Dockerfile'), 'utf8'))
const ignored = ignoredBy(readFileSync(join(REPO, '.dockerignore'), 'utf8'))
let root: string // stands for the image's /
let app: string // the image's WORKDIR
let env: Record<string, string>
const copied: string[] = []
const notInContext: string[] = []

/** An absolute path of the image inside the stand-in root. */
const inImage = (path: string) => join(root, path)

function run(cmd: string[]) {
  const p = Bun.spawnSync(cmd, { cwd: app, env })
  return { code: p.exitCode, out: p.stdout.toString(), err: p.stderr.toString() }
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'gpuhq-image-'))
  let workdir = '/'
  env = { PATH: '', HOME: process.env.HOME ?? root } // HOME: Bun's package cache, as scripts/test left it
  for (const { op, args } of dockerfile) {
    if (op === 'WORKDIR') workdir = args
    if (op === 'COPY') {
      expect(args).not.toStartWith('--') // --from or --chown would need handling here
      const words = args.split(/\s+/)
      const dest = join(workdir, words.pop()!)
      for (const source of words)
        for (const file of filesUnder(source.replace(/\/+$/, ''))) {
          if (ignored(file)) {
            notInContext.push(file)
            continue
          }
          // A directory source copies its contents into dest; a file into dest/ (or as dest).
          const target = lstatSync(join(REPO, source)).isDirectory()
            ? join(dest, relative(source, file))
            : dest.endsWith('/') || words.length > 1
              ? join(dest, file.split('/').pop()!)
              : dest
          mkdirSync(dirname(inImage(target)), { recursive: true })
          cpSync(join(REPO, file), inImage(target))
          copied.push(file)
        }
    }
    if (op === 'ENV')
      for (const m of args.matchAll(/(\w+)=("[^"]*"|\S*)/g)) env[m[1]!] = m[2]!.replace(/^"|"$/g, '').replace(/(^|:)\/app\b/g, `$1${inImage('/app')}`)
  }
  app = inImage(workdir)
  // The base image's Bun, at the path the oven/bun image has it.
  mkdirSync(inImage('/usr/local/bin'), { recursive: true })
  symlinkSync(process.execPath, inImage('/usr/local/bin/bun'))
  env.PATH = `${inImage('/usr/local/bin')}:/usr/bin:/bin`
  for (const { op, args } of dockerfile.filter((i) => i.op === 'RUN'))
    for (const step of args.split('&&').map((s) => s.trim())) {
      if (step.startsWith('bun install')) {
        const r = run(['bun', ...step.split(/\s+/).slice(1)])
        expect({ op, step, code: r.code, err: r.code ? r.err : '' }).toEqual({ op, step, code: 0, err: '' })
      }
      // The agent executables, built as the image builds them (the arm64 runtime from Bun's cache, as scripts/test left it).
      if (step.startsWith('bun scripts/build-agent.ts')) {
        const r = run([
          'bun',
          ...step
            .split(/\s+/)
            .slice(1)
            .map((w) => w.replace(/^\/app\b/, inImage('/app'))),
        ])
        expect({ op, step, code: r.code, err: r.code ? r.err : '' }).toEqual({ op, step, code: 0, err: '' })
      }
      const link = /^ln -s (\S+) (\S+)$/.exec(step)
      if (link) symlinkSync(inImage(link[1]!), inImage(link[2]!))
      if (step.startsWith('mkdir -p')) for (const d of step.split(/\s+/).slice(2)) mkdirSync(inImage(d), { recursive: true })
    }
}, 120_000)
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('the Docker image, rebuilt from the Dockerfile as a directory', () => {
  test('copies every file it names through .dockerignore, with the operator commands among them', () => {
    expect(notInContext).toEqual([])
    for (const f of [
      'package.json',
      'bun.lock',
      'src/main.ts',
      'db/client.ts',
      'jobs/index.ts',
      'agent/gpuhq-agent.ts',
      'web/main.tsx',
      'scripts/admin',
      'scripts/admin.ts',
      'scripts/lib.sh',
    ])
      expect(copied).toContain(f)
    expect(existsSync(join(app, 'scripts/admin'))).toBe(true)
    expect(lstatSync(join(app, 'scripts/admin')).mode & 0o111).not.toBe(0)
  })

  test('builds the agent executables for both architectures where AGENT_BIN_DIR points, each matching its published SHA-256', () => {
    const dir = env.AGENT_BIN_DIR!
    expect(dir).toBe(inImage('/app/dist/agent'))
    const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as { files: Record<string, { file: string; sha256: string }> }
    expect(Object.keys(manifest.files).sort()).toEqual(['linux-arm64', 'linux-x64'])
    for (const { file, sha256 } of Object.values(manifest.files)) {
      expect(new Bun.CryptoHasher('sha256').update(readFileSync(join(dir, file))).digest('hex')).toBe(sha256)
      expect(readFileSync(join(dir, `${file}.sha256`), 'utf8')).toBe(`${sha256}  ${file}\n`)
    }
  })

  test('installs the runtime dependencies only: no TypeScript compiler, no test or build tools', () => {
    expect(existsSync(join(app, 'node_modules/elysia/package.json'))).toBe(true)
    expect(existsSync(join(app, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js'))).toBe(true)
    for (const dev of ['typescript', '@typescript', 'drizzle-kit', 'playwright-core', 'fast-check'])
      expect({ dev, present: existsSync(join(app, 'node_modules', dev)) }).toEqual({ dev, present: false })
  })

  test('bundles the web console from its own copy, with the runtime dependencies alone', () => {
    const built = run(['bun', '-e', "const b = await (await import('./src/modules/console')).consoleBundle(); console.log([...b.assets.keys()].join(' '))"])
    expect({ code: built.code, err: built.err }).toEqual({ code: 0, err: '' })
    expect(built.out).toMatch(/main-\w+\.js/)
    expect(built.out).toMatch(/main-\w+\.css/)
  }, 60_000)

  test('runs as a non-root user, keeps ./data on a volume, checks its health', () => {
    const ops = (op: string) => dockerfile.filter((i) => i.op === op).map((i) => i.args)
    expect(ops('USER').at(-1)).not.toMatch(/^(root|0)$/)
    expect(ops('VOLUME')).toContain('/app/data')
    expect(ops('HEALTHCHECK').join(' ')).toContain('/healthz')
  })

  test('`admin create-account` from the image makes the first account, and `admin tenants` lists it', () => {
    const help = run(['admin', '--help'])
    expect(help.code).toBe(0)
    expect(help.out).toContain('create-account --email')

    // As `docker run --rm -v gpuhq-data:/app/data gpuhq admin create-account …` runs it: production
    // mode, the database on the volume, the secret key generated there.
    expect(env.NODE_ENV).toBe('production')
    const created = run(['admin', 'create-account', '--email', 'first@example.com', '--tenant-name', 'First rigs'])
    expect({ code: created.code, err: created.err }).toEqual({ code: 0, err: '' })
    expect(created.out).toMatch(/one-time ticket to set the password[^:]*: \S+/)
    expect(existsSync(join(app, 'data/gpuhq.db'))).toBe(true)

    const tenants = run(['scripts/admin', 'tenants'])
    expect(tenants.code).toBe(0)
    expect(tenants.out).toMatch(/plan=free\s+state=active.*First rigs/)
  }, 120_000)
})
