import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'

/**
 * The reference agent, served by the service itself so an owner can install it with one line:
 * GET /agent/install.sh and GET /agent/gpuhq-agent.tar.gz (what install.sh downloads). The tarball
 * is a plain ustar archive built in memory once, then gzipped: agent/ as it is, plus what its
 * `#protocol` import needs on a host with nothing but Bun (docs/agent.md "The tarball: running from source"):
 * protocol.js, the protocol folder bundled with TypeBox into one file, and a package.json whose
 * "imports" points `#protocol` at it (in the repository, the root package.json points it at
 * protocol/index.ts).
 */
const AGENT_DIR = resolve(import.meta.dir, '../../../agent')
const PROTOCOL_ENTRY = resolve(import.meta.dir, '../../../protocol/index.ts')

/** The package.json shipped beside the agent: it only resolves `#protocol` to the bundle. */
const SHIPPED_PACKAGE_JSON = `${JSON.stringify({ name: 'gpuhq-agent', private: true, type: 'module', imports: { '#protocol': './protocol.js' } }, null, 2)}\n`

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0'
}

function header(name: string, size: number, mode: number, mtime: number): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100, 'utf8')
  h.write(octal(mode, 8), 100)
  h.write(octal(0, 8), 108)
  h.write(octal(0, 8), 116)
  h.write(octal(size, 12), 124)
  h.write(octal(mtime, 12), 136)
  h.write('        ', 148) // checksum counted as spaces
  h.write('0', 156)
  h.write('ustar\0', 257)
  h.write('00', 263)
  let sum = 0
  for (const b of h) sum += b
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return h
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name)
    if (e.isDirectory()) return files(p)
    return e.isFile() ? [p] : []
  })
}

/** protocol/ and TypeBox in one ES module, with TypeBox's MIT notice at its head. */
async function protocolBundle(): Promise<Buffer> {
  const typeboxLicense = readFileSync(join(dirname(require.resolve('@sinclair/typebox/package.json')), 'license'), 'utf8')
  const built = await Bun.build({
    entrypoints: [PROTOCOL_ENTRY],
    target: 'bun',
    format: 'esm',
    banner: `// The gpuhq agent protocol (protocol/ of gpuhq), bundled with TypeBox (@sinclair/typebox):\n/*\n${typeboxLicense.replaceAll('*/', '* /')}\n*/`,
  })
  if (!built.success) throw new AggregateError(built.logs, 'bundling protocol/ for the agent tarball failed')
  return Buffer.from(await built.outputs[0]!.arrayBuffer())
}

let cached: Promise<Uint8Array> | null = null

export function agentTarball(): Promise<Uint8Array> {
  cached ??= buildTarball().catch((e) => {
    cached = null
    throw e
  })
  return cached
}

async function buildTarball(): Promise<Uint8Array> {
  const entries: { name: string; body: Buffer; mtime: number }[] = []
  for (const file of files(AGENT_DIR).sort()) {
    const name = relative(AGENT_DIR, file)
    if (name.length > 99) continue
    entries.push({ name, body: readFileSync(file), mtime: Math.floor(statSync(file).mtimeMs / 1000) })
  }
  const mtime = Math.floor(statSync(PROTOCOL_ENTRY).mtimeMs / 1000)
  entries.push({ name: 'package.json', body: Buffer.from(SHIPPED_PACKAGE_JSON), mtime }, { name: 'protocol.js', body: await protocolBundle(), mtime })
  const parts: Buffer[] = []
  for (const { name, body, mtime } of entries) {
    parts.push(header(name, body.length, name.endsWith('.sh') ? 0o755 : 0o644, mtime), body)
    const pad = (512 - (body.length % 512)) % 512
    if (pad) parts.push(Buffer.alloc(pad))
  }
  parts.push(Buffer.alloc(1024))
  return Bun.gzipSync(Buffer.concat(parts))
}

export function installScript(): string {
  return readFileSync(join(AGENT_DIR, 'install.sh'), 'utf8')
}

/** The architectures the agent is built for (scripts/build-agent.ts), as `uname -m` names them in install.sh: x86_64 → linux-x64, aarch64 → linux-arm64. */
const AGENT_TARGETS = ['linux-x64', 'linux-arm64'] as const
export type AgentTarget = (typeof AGENT_TARGETS)[number]

/** What scripts/build-agent.ts writes beside the executables. */
type Manifest = { version: string; files: Partial<Record<AgentTarget, { file: string; sha256: string; bytes: number }>> }

export type AgentBinary = { path: string; sha256: string; bytes: number; version: string; name: string }

/**
 * The built executable of a target, from AGENT_BIN_DIR's manifest.json (read at each request: a
 * rebuild while the service runs is served at once), or null when that target was not built. A
 * file whose size no longer matches the manifest is treated as not built: the checksum served
 * would not match it.
 */
export function agentBinary(binDir: string, target: AgentTarget): AgentBinary | null {
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(join(binDir, 'manifest.json'), 'utf8')) as Manifest
  } catch {
    return null
  }
  const entry = manifest.files?.[target]
  if (!entry || !/^[0-9a-f]{64}$/.test(entry.sha256)) return null
  const path = join(binDir, entry.file)
  try {
    if (statSync(path).size !== entry.bytes) return null
  } catch {
    return null
  }
  return { path, sha256: entry.sha256, bytes: entry.bytes, version: manifest.version, name: `gpuhq-agent-${target}` }
}

/** The version the service offers agents: the one its built executables report, or null when none is built. */
export function servedAgentVersion(binDir: string): string | null {
  // Asked at every session's hello: without a build (no manifest) one stat answers, not a failed read per target.
  if (!statSync(join(binDir, 'manifest.json'), { throwIfNoEntry: false })) return null
  for (const target of AGENT_TARGETS) {
    const b = agentBinary(binDir, target)
    if (b) return b.version
  }
  return null
}
