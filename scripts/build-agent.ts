/**
 * Builds the agent into one executable per architecture (docs/agent.md "The single executable"):
 * `bun build --compile` of agent/gpuhq-agent.ts with protocol/ and TypeBox inside, plus the Bun
 * runtime of the target. Writes into the output directory (default dist/agent, what the service
 * serves at /agent/gpuhq-agent-linux-<arch>):
 *
 *   gpuhq-agent-linux-x64, gpuhq-agent-linux-arm64     the executables
 *   gpuhq-agent-linux-<arch>.sha256                    "<hex>  gpuhq-agent-linux-<arch>" (sha256sum -c)
 *   manifest.json                                      {version, source, files: {<arch>: {file, sha256, bytes}}}
 *
 * A target whose file was built from the same sources, version and Bun is kept (the build is
 * skipped), so running this at every start costs a hash of the sources. The host's own
 * architecture builds offline (Bun copies itself); the other one needs that architecture's Bun
 * runtime, which Bun fetches from the npm registry once into its cache: without network that
 * target is left out with a warning and the service answers 404 for it.
 *
 *   bun scripts/build-agent.ts [--out dist/agent] [--targets linux-x64,linux-arm64] [--version 1.0.1] [--require-all] [--quiet]
 *
 * --quiet (scripts/start) writes what it did to <out>/build.log instead of stderr and exits 1 only
 * when this machine's own target failed; --require-all (the image build) exits 1 when any did.
 */
import { createHash } from 'node:crypto'
import { appendFileSync, chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { parseArgs } from 'node:util'

const ROOT = resolve(import.meta.dir, '..')
export const AGENT_TARGETS = ['linux-x64', 'linux-arm64'] as const
export type AgentTarget = (typeof AGENT_TARGETS)[number]

export type AgentManifest = {
  version: string
  source: string
  files: Partial<Record<AgentTarget, { file: string; sha256: string; bytes: number }>>
}

/** The version agent/lib/version.ts declares (what a build without --version reports). */
export function sourceAgentVersion(): string {
  const m = /AGENT_SOURCE_VERSION = '([^']+)'/.exec(readFileSync(join(ROOT, 'agent/lib/version.ts'), 'utf8'))
  if (!m) throw new Error('agent/lib/version.ts declares no AGENT_SOURCE_VERSION')
  return m[1]!
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name)
    return e.isDirectory() ? listFiles(p) : e.isFile() ? [p] : []
  })
}

/** What a build depends on: the agent and protocol sources, TypeBox's version, Bun's version and the version built. */
function sourceHash(version: string): string {
  const h = createHash('sha256')
  for (const file of [...listFiles(join(ROOT, 'agent')), ...listFiles(join(ROOT, 'protocol'))].sort()) {
    h.update(relative(ROOT, file)).update('\0').update(readFileSync(file)).update('\0')
  }
  h.update(readFileSync(join(ROOT, 'node_modules/@sinclair/typebox/package.json')))
  return h.update(`bun ${Bun.version}\0version ${version}`).digest('hex')
}

export function readManifest(out: string): AgentManifest | null {
  try {
    return JSON.parse(readFileSync(join(out, 'manifest.json'), 'utf8')) as AgentManifest
  } catch {
    return null
  }
}

export function agentFileName(target: AgentTarget): string {
  return `gpuhq-agent-${target}`
}

/**
 * Builds the targets into `out` unless already built from the same sources. Answers the manifest
 * and the targets that could not be built (with why).
 */
export async function buildAgent(opts: { out: string; targets?: readonly AgentTarget[]; version?: string; log?: (line: string) => void }) {
  const out = resolve(opts.out)
  const version = opts.version ?? sourceAgentVersion()
  const log = opts.log ?? (() => {})
  const source = sourceHash(version)
  mkdirSync(out, { recursive: true })
  const previous = readManifest(out)
  const manifest: AgentManifest = { version, source, files: previous?.source === source ? { ...previous.files } : {} }
  const failed: { target: AgentTarget; reason: string }[] = []
  for (const target of opts.targets ?? AGENT_TARGETS) {
    const name = agentFileName(target)
    const path = join(out, name)
    const known = manifest.files[target]
    if (known && existsSync(path) && statSync(path).size === known.bytes) continue
    const tmp = join(out, `.${name}.${process.pid}.building`)
    rmSync(tmp, { force: true })
    let built: Awaited<ReturnType<typeof Bun.build>>
    try {
      built = await Bun.build({
        entrypoints: [join(ROOT, 'agent/gpuhq-agent.ts')],
        compile: { target: `bun-${target}`, outfile: tmp },
        define: { GPUHQ_AGENT_BUILD_VERSION: JSON.stringify(version) },
        minify: { syntax: true, whitespace: true },
      })
    } catch (e) {
      failed.push({ target, reason: e instanceof Error ? e.message : String(e) })
      continue
    }
    if (!built.success || !existsSync(tmp)) {
      failed.push({ target, reason: built.logs.map(String).join('; ') || 'bun build --compile failed' })
      continue
    }
    chmodSync(tmp, 0o755)
    const body = readFileSync(tmp)
    const sha256 = createHash('sha256').update(body).digest('hex')
    renameSync(tmp, path)
    writeFileSync(join(out, `${name}.sha256`), `${sha256}  ${name}\n`)
    manifest.files[target] = { file: name, sha256, bytes: body.length }
    log(`built ${name} (${version}, ${(body.length / 2 ** 20).toFixed(1)} MiB, sha256 ${sha256})`)
  }
  const manifestTmp = join(out, `.manifest.${process.pid}.json`)
  writeFileSync(manifestTmp, `${JSON.stringify(manifest, null, 2)}\n`)
  renameSync(manifestTmp, join(out, 'manifest.json'))
  return { manifest, failed }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      out: { type: 'string' },
      targets: { type: 'string' },
      version: { type: 'string' },
      'require-all': { type: 'boolean' },
      quiet: { type: 'boolean' },
    },
  })
  if (values.version !== undefined && !/^[0-9]+\.[0-9]+\.[0-9]+$/.test(values.version)) {
    process.stderr.write('build-agent: --version must be MAJOR.MINOR.PATCH (what agent.update accepts)\n')
    process.exit(2)
  }
  const out = values.out ?? join(ROOT, 'dist/agent')
  mkdirSync(out, { recursive: true })
  const say = values.quiet
    ? (line: string) => appendFileSync(join(out, 'build.log'), `${new Date().toISOString()} ${line}\n`)
    : (line: string) => process.stderr.write(`build-agent: ${line}\n`)
  const targets = values.targets ? (values.targets.split(',') as AgentTarget[]) : undefined
  for (const t of targets ?? []) {
    if (!AGENT_TARGETS.includes(t)) {
      process.stderr.write(`build-agent: unknown target ${t} (${AGENT_TARGETS.join(', ')})\n`)
      process.exit(2)
    }
  }
  const { failed } = await buildAgent({ out, targets, version: values.version, log: say })
  for (const f of failed)
    say(
      `could not build ${agentFileName(f.target)} (${f.reason}); a target other than this machine's needs Bun's runtime for it from the npm registry once. The service answers 404 for it until it is built.`,
    )
  const own: AgentTarget = process.arch === 'arm64' ? 'linux-arm64' : 'linux-x64'
  process.exit(failed.length && (values['require-all'] || failed.some((f) => f.target === own)) ? 1 : 0)
}
